"""A switch's shared buffer and PFC (``SwitchMmu``, ``QbbNetDevice::SendPfc`` / ``Receive``).

Each ingress (port, priority) has a 4 KB reserve; beyond it packets take the switch's shared
buffer up to the dynamic threshold ``(buffer - headroom - reserve - shared used) >> shift``
(alpha = 1/8 at the NIC's rate, halved per doubling above it), and beyond that the port's PFC
headroom (3x one-way BDP).  When an ingress queue uses headroom, or its shared use reaches the
threshold, a PAUSE goes upstream on queue 0 (strict priority); once its headroom is empty and its
shared use is 3 KB under the threshold, a RESUME.  A packet that fits nowhere is dropped (only
possible with ``ENABLE_PFC 0``).  Egress bytes per (port, priority) feed ECN marking (``switch``).
"""

from .kernel import kernel
from .layout import (CI_BUFFER, CI_PFC, CI_PFC_SIZE, CI_RESERVE, CI_RESUME_OFFSET, KIND_PFC, NQ, NT_IS_SWITCH,
                     NT_SHARED_USED, NT_TOTAL_HDRM, NT_TOTAL_RSRV, PK_FLOW, PK_KIND, PK_PAYLOAD, PK_QUEUE, PK_SEQ,
                     PK_SIZE, PT_HEADROOM, PT_IFINDEX, PT_NODE, PT_PFC_SHIFT, QT_EGRESS, QT_HDRM, QT_INGRESS,
                     QT_MMU_PAUSED, QT_PAUSED, ST_NOW, ST_NPFC, ST_PAUSES)
from .packets import NONE, alloc, enqueue
from .slots import kick


@kernel(inline="always")
def _threshold(net, cfg, p):
    """The dynamic PFC threshold of ingress port p's switch now."""
    nodes = net.nodes
    sw = net.ports[p, PT_NODE]
    free = cfg.ints[CI_BUFFER] - nodes[sw, NT_TOTAL_HDRM] - nodes[sw, NT_TOTAL_RSRV] - nodes[sw, NT_SHARED_USED]
    return free >> net.ports[p, PT_PFC_SHIFT]


@kernel(inline="always")
def _shared_used(net, cfg, k):
    """Shared-buffer bytes of ingress queue k (beyond its reserve)."""
    used = net.queues[k, QT_INGRESS]
    r = cfg.ints[CI_RESERVE]
    return used - r if used > r else 0


@kernel
def send_pfc(net, cfg, state, p, q, pause):
    """``QbbNetDevice::SendPfc``: a PAUSE (1) or RESUME (0) frame for priority q out of port p,
    on queue 0."""
    pk = net.packets
    i = alloc(net, state)
    pk[i, PK_KIND] = KIND_PFC
    pk[i, PK_SIZE] = cfg.ints[CI_PFC_SIZE]
    pk[i, PK_PAYLOAD] = 0
    pk[i, PK_QUEUE] = q
    pk[i, PK_SEQ] = pause
    pk[i, PK_FLOW] = NONE
    enqueue(net, p, 0, i)
    kick(net, state, p)


@kernel
def admit(net, cfg, state, ip, e, q, size):
    """A packet of ``size`` bytes arrived on ingress port ``ip``, priority q, for egress port e:
    ``CheckIngressAdmission`` (False: dropped), ``UpdateIngressAdmission``,
    ``UpdateEgressAdmission``, then ``CheckAndSendPfc``."""
    queues = net.queues
    k = ip * NQ + q
    thresh = _threshold(net, cfg, ip)
    # drop only when the headroom is full too
    if size + queues[k, QT_HDRM] > net.ports[ip, PT_HEADROOM] and size + _shared_used(net, cfg, k) > thresh:
        return False
    reserve = cfg.ints[CI_RESERVE]
    new_bytes = queues[k, QT_INGRESS] + size
    if new_bytes <= reserve:
        queues[k, QT_INGRESS] += size
    elif new_bytes - reserve > thresh:
        queues[k, QT_HDRM] += size
    else:
        queues[k, QT_INGRESS] += size
        over = new_bytes - reserve
        net.nodes[net.ports[ip, PT_NODE], NT_SHARED_USED] += size if size < over else over
    queues[e * NQ + q, QT_EGRESS] += size
    if cfg.ints[CI_PFC] != 0 and queues[k, QT_MMU_PAUSED] == 0:
        if queues[k, QT_HDRM] > 0 or _shared_used(net, cfg, k) >= _threshold(net, cfg, ip):
            send_pfc(net, cfg, state, ip, q, 1)
            queues[k, QT_MMU_PAUSED] = 1
    return True


@kernel
def release(net, cfg, state, ip, e, q, size):
    """A packet of ``size`` bytes that came in on ``ip`` leaves egress port e, priority q:
    ``RemoveFromIngressAdmission``, ``RemoveFromEgressAdmission``.  Returns the egress queue's
    bytes now (what ECN marks on); the caller then calls ``maybe_resume``."""
    queues = net.queues
    k = ip * NQ + q
    hd = queues[k, QT_HDRM]
    from_hdrm = hd if hd < size else size
    over = queues[k, QT_INGRESS] - cfg.ints[CI_RESERVE]
    if over < 0:
        over = 0
    rest = size - from_hdrm
    queues[k, QT_HDRM] -= from_hdrm
    queues[k, QT_INGRESS] -= rest
    net.nodes[net.ports[ip, PT_NODE], NT_SHARED_USED] -= rest if rest < over else over
    ek = e * NQ + q
    queues[ek, QT_EGRESS] -= size
    return queues[ek, QT_EGRESS]


@kernel
def maybe_resume(net, cfg, state, ip, q):
    """``CheckAndSendResume``: ingress queue (ip, q) was paused upstream and has drained enough."""
    queues = net.queues
    k = ip * NQ + q
    if queues[k, QT_MMU_PAUSED] != 0:
        su = _shared_used(net, cfg, k)
        if queues[k, QT_HDRM] == 0 and (su == 0 or su + cfg.ints[CI_RESUME_OFFSET] <= _threshold(net, cfg, ip)):
            send_pfc(net, cfg, state, ip, q, 0)
            queues[k, QT_MMU_PAUSED] = 0


@kernel
def pfc_received(net, state, p, i):
    """``QbbNetDevice::Receive`` of PFC frame i at port p: pause or resume the queue it names
    (logged for ``pfc.txt``); a resumed port may transmit again."""
    pk = net.packets
    q = pk[i, PK_QUEUE]
    pause = pk[i, PK_SEQ]
    net.queues[p * NQ + q, QT_PAUSED] = pause
    log = net.pfc_log
    n = state[ST_NPFC]
    node = net.ports[p, PT_NODE]
    log[n, 0] = state[ST_NOW]
    log[n, 1] = node
    log[n, 2] = net.nodes[node, NT_IS_SWITCH]
    log[n, 3] = net.ports[p, PT_IFINDEX]
    log[n, 4] = pause
    state[ST_NPFC] = n + 1
    if pause == 1:
        state[ST_PAUSES] += 1
    else:
        kick(net, state, p)
