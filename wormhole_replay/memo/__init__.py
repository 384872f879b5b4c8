"""Memoized transients and steady states (Wormhole part 2): FCG keys, the SQL store."""
