"""What the network did during a run, as tables and pictures: bandwidths and time breakdowns
(``breakdown``), the critical path (``critical``), PFC pause intervals (``pfc``), progress that
measures bytes (``progress``) and the HTML report of a run folder (``report``, ``command``)."""
