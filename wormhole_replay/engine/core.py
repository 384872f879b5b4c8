"""The packet-level event loop (Numba).  Knows nothing of files, SQL or the command line.

Semantics follow the HPCC ns-3 RDMA simulator as coded (``qbb-net-device.cc``, ``rdma-hw.cc``,
``switch-node.cc``, ``switch-mmu.cc``); each function's docstring names the reference routine it
mirrors.  Time is integer nanoseconds, as in ns-3; serialisation and pacing times are truncated to
whole ns as the reference does.

Scheduling (htsim style): a slot per component, each pending at most once in an indexed heap:

* ``TXDONE[p]``  egress port p finishes serialising a packet (skipped at a switch port whose
  queues are empty, and scheduled late if a packet arrives before it would have fired);
* ``ARRIVE[p]``  the head packet in flight on the link out of port p reaches the far end (a link
  delivers in order, so it keeps its packets in a FIFO);
* ``WAKE[h]``    host h's NIC wakes up when a paced QP becomes eligible (``m_nextSend``);
* ``FLOWS``      the next flow start time;
* ``QP[f, k]``   DCQCN alpha / rate-decrease / rate-increase timers and the retransmission timer.

Every event carries the sequence number the reference would have given it (reserved when the
reference schedules it: a packet's arrival is numbered when its transmission starts), so
same-nanosecond events run in the reference's order.

All state is in the tables of ``layout``; every handler takes the same arguments, the engine
state ``pt, ptf, qt, nt, ht, ft, ff, fh, fhf, pk, paths, order, qpl, kick, qn, qw, qm, hs, hpos, ci, cf,
st, pfc, scr``.  The kernels never allocate, so they are compiled without Numba's reference
counting (``_nrt=False``): with it, every call took and dropped a reference on each array
argument, and those atomic operations were measured at 60-70% of the run time (S1: 0.72 s ->
0.13 s for 565k events).
"""

import numpy as np
from numba import njit

from .queue import QN_TIME, QN_WHERE, q_pop, q_remove, q_set
from .slots import kick as _kick, next_seq, qp_slot, sample_slot
from . import wormhole as wh
from .layout import *  # noqa: F403  (column and index constants)

CC_DCQCN = 1
CC_HPCC = 3
CC_DCTCP = 8

T_ALPHA = 0
T_DEC = 1
T_RP = 2
T_RTO = 3
T_START = 4  # a flow whose predecessors are all done starts

INT_TIME_MOD = 1 << 24
INT_BYTES_MOD = 1 << 20
INT_QLEN_MOD = 1 << 17
INT_BYTES_SHIFT = 24
INT_QLEN_SHIFT = 44
INT_RATE_SHIFT = 61
INT_BYTE_UNIT = 128
INT_QLEN_UNIT = 80

FREE_MARGIN = 256  # packets one event may need at most (ACK, PFC frames); below it: grow first
NONE = -1
NEVER = 1 << 62


# ------------------------------------------------------------------ small helpers -------------


@njit(cache=True, inline="always", _nrt=False)
def _tx_ns(size, bps):
    """Serialisation time, truncated to whole ns like the reference."""
    return (size * 8 * 1_000_000_000) // bps


@njit(cache=True, _nrt=False)
def _rand(st):
    """xorshift64*: a uniform double in [0, 1); the state lives in st[ST_RNG]."""
    x = np.uint64(st[ST_RNG])
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    st[ST_RNG] = np.int64(x)
    y = x * np.uint64(2685821657736338717)
    return float(y >> np.uint64(11)) * (1.0 / 9007199254740992.0)


MRG_M1 = 4294967087
MRG_M2 = 4294944443


@njit(cache=True, _nrt=False)
def _mrg_jump(ci, st, base, row, m):
    """One row of (A^(2^127) . state) mod m for a component of MRG32k3a (products < 2^64)."""
    acc = np.uint64(0)
    for k in range(3):
        acc = (acc + (np.uint64(ci[CI_MRG_JUMP + base + 3 * row + k]) * np.uint64(st[ST_MRG + (base // 3) + k])) % np.uint64(m)) % np.uint64(m)
    return np.int64(acc)


@njit(cache=True, _nrt=False)
def _ecn_uniform(ci, st):
    """A uniform [0, 1) draw for ECN marking.  With CI_ECN_RNG, exactly what the reference's
    ``UniformVariable(0, 1).GetValue()`` returns: a fresh ns-3 RngStream (MRG32k3a) per call, whose
    first output is used, streams numbered consecutively."""
    if ci[CI_ECN_RNG] == 0:
        return _rand(st)
    s0 = st[ST_MRG]
    s1 = st[ST_MRG + 1]
    s3 = st[ST_MRG + 3]
    s5 = st[ST_MRG + 5]
    p1 = (1403580 * s1 - 810728 * s0) % MRG_M1
    p2 = (527612 * s5 - 1370589 * s3) % MRG_M2
    if p1 > p2:
        u = (p1 - p2) * 2.328306549295728e-10
    else:
        u = (p1 - p2 + MRG_M1) * 2.328306549295728e-10
    # advance to the next stream
    a0 = _mrg_jump(ci, st, 0, 0, MRG_M1)
    a1 = _mrg_jump(ci, st, 0, 1, MRG_M1)
    a2 = _mrg_jump(ci, st, 0, 2, MRG_M1)
    b0 = _mrg_jump(ci, st, 9, 0, MRG_M2)
    b1 = _mrg_jump(ci, st, 9, 1, MRG_M2)
    b2 = _mrg_jump(ci, st, 9, 2, MRG_M2)
    st[ST_MRG] = a0
    st[ST_MRG + 1] = a1
    st[ST_MRG + 2] = a2
    st[ST_MRG + 3] = b0
    st[ST_MRG + 4] = b1
    st[ST_MRG + 5] = b2
    return u


@njit(cache=True, _nrt=False)
def _alloc(pk, st):
    i = st[ST_FREE]
    st[ST_FREE] = pk[i, PK_NEXT]
    st[ST_NFREE] -= 1
    pk[i, PK_NEXT] = NONE
    pk[i, PK_FLAGS] = 0
    pk[i, PK_NHOP] = 0
    pk[i, PK_HOP] = 0
    st[ST_PKTS_ALIVE] += 1
    if st[ST_PKTS_ALIVE] > st[ST_PEAK_PKTS]:
        st[ST_PEAK_PKTS] = st[ST_PKTS_ALIVE]
    return i


@njit(cache=True, _nrt=False)
def _free(pk, st, i):
    pk[i, PK_NEXT] = st[ST_FREE]
    st[ST_FREE] = i
    st[ST_NFREE] += 1
    st[ST_PKTS_ALIVE] -= 1


@njit(cache=True, _nrt=False)
def _enqueue(pt, qt, pk, p, q, i):
    """Append packet i to egress queue q of port p."""
    k = p * NQ + q
    pk[i, PK_NEXT] = NONE
    if qt[k, QT_HEAD] == NONE:
        qt[k, QT_HEAD] = i
    else:
        pk[qt[k, QT_TAIL], PK_NEXT] = i
    qt[k, QT_TAIL] = i
    pt[p, PT_QBYTES] += pk[i, PK_SIZE]
    pt[p, PT_QPKTS] += 1


@njit(cache=True, _nrt=False)
def _dequeue(pt, qt, pk, p, q):
    k = p * NQ + q
    i = qt[k, QT_HEAD]
    qt[k, QT_HEAD] = pk[i, PK_NEXT]
    if qt[k, QT_HEAD] == NONE:
        qt[k, QT_TAIL] = NONE
    pk[i, PK_NEXT] = NONE
    pt[p, PT_QBYTES] -= pk[i, PK_SIZE]
    pt[p, PT_QPKTS] -= 1
    return i


# ------------------------------------------------------------------ link layer -----------------


@njit(cache=True, _nrt=False)
def _port_ready(pt, qn, st, p):
    """QbbNetDevice m_txMachineState == READY at this instant."""
    if qn[p, QN_WHERE] >= 0:  # a transmit-complete is pending
        return False
    bu = pt[p, PT_BUSY_UNTIL]
    now = st[ST_NOW]
    return bu < now or (bu == now and pt[p, PT_TXDONE_SEQ] < st[ST_CUR_SEQ])


@njit(cache=True, _nrt=False)
def _transmit_start(pt, pk, qn, qw, qm, hs, hpos, ci, st, p, i):
    """QbbNetDevice::TransmitStart + QbbChannel::TransmitStart."""
    now = st[ST_NOW]
    tx = _tx_ns(pk[i, PK_SIZE], pt[p, PT_RATE])
    pt[p, PT_BUSY_UNTIL] = now + tx
    pt[p, PT_TXDONE_SEQ] = next_seq(st)  # the reference schedules TransmitComplete first,
    ev = next_seq(st)  # then the peer's Receive
    pk[i, PK_ARRIVE] = now + tx + pt[p, PT_DELAY]
    pk[i, PK_EVSEQ] = ev
    pk[i, PK_NEXT] = NONE
    if pt[p, PT_LN_HEAD] == NONE:
        pt[p, PT_LN_HEAD] = i
        q_set(qn, qw, qm, hs, hpos, ci[CI_N_PORTS] + p, pk[i, PK_ARRIVE], ev)
    else:
        pk[pt[p, PT_LN_TAIL], PK_NEXT] = i
    pt[p, PT_LN_TAIL] = i
    # A host NIC always needs its transmit-complete (it pulls from QPs); a switch port only when
    # something is already waiting (otherwise an enqueue schedules it late, with the same seq).
    if pt[p, PT_IS_HOST] != 0 or pt[p, PT_QPKTS] > 0:
        q_set(qn, qw, qm, hs, hpos, p, now + tx, pt[p, PT_TXDONE_SEQ])


# ------------------------------------------------------------------ switch MMU -----------------


@njit(cache=True, inline="always", _nrt=False)
def _pfc_threshold(pt, nt, ci, p):
    sw = pt[p, PT_NODE]
    free = ci[CI_BUFFER] - nt[sw, NT_TOTAL_HDRM] - nt[sw, NT_TOTAL_RSRV] - nt[sw, NT_SHARED_USED]
    return free >> pt[p, PT_PFC_SHIFT]


@njit(cache=True, inline="always", _nrt=False)
def _shared_used(qt, ci, k):
    used = qt[k, QT_INGRESS]
    r = ci[CI_RESERVE]
    return used - r if used > r else 0


@njit(cache=True, _nrt=False)
def _send_pfc(pt, qt, pk, kick, ci, st, p, q, pause):
    """QbbNetDevice::SendPfc: a PAUSE (or RESUME) frame out of ingress port p, queue 0."""
    i = _alloc(pk, st)
    pk[i, PK_KIND] = KIND_PFC
    pk[i, PK_SIZE] = ci[CI_PFC_SIZE]
    pk[i, PK_PAYLOAD] = 0
    pk[i, PK_QUEUE] = q
    pk[i, PK_SEQ] = pause
    pk[i, PK_FLOW] = NONE
    _enqueue(pt, qt, pk, p, 0, i)
    _kick(pt, kick, st, p)


@njit(cache=True, _nrt=False)
def _switch_receive(pt, qt, nt, ft, pk, paths, kick, ci, st, ip, i):
    """SwitchNode::SendToDev: route, admit into the shared buffer, maybe PAUSE, enqueue."""
    f = pk[i, PK_FLOW]
    off = ft[f, FT_DPATH] if pk[i, PK_KIND] == KIND_DATA else ft[f, FT_APATH]
    e = paths[off + pk[i, PK_HOP]]
    pk[i, PK_HOP] += 1
    q = pk[i, PK_QUEUE]
    size = pk[i, PK_SIZE]
    if q != 0:
        k = ip * NQ + q
        thresh = _pfc_threshold(pt, nt, ci, ip)
        # CheckIngressAdmission: drop only when the headroom is full too
        if size + qt[k, QT_HDRM] > pt[ip, PT_HEADROOM] and size + _shared_used(qt, ci, k) > thresh:
            st[ST_DROPS] += 1
            _free(pk, st, i)
            return
        # UpdateIngressAdmission / UpdateEgressAdmission
        reserve = ci[CI_RESERVE]
        new_bytes = qt[k, QT_INGRESS] + size
        if new_bytes <= reserve:
            qt[k, QT_INGRESS] += size
        elif new_bytes - reserve > thresh:
            qt[k, QT_HDRM] += size
        else:
            qt[k, QT_INGRESS] += size
            over = new_bytes - reserve
            nt[pt[ip, PT_NODE], NT_SHARED_USED] += size if size < over else over
        qt[e * NQ + q, QT_EGRESS] += size
        # CheckAndSendPfc
        if ci[CI_PFC] != 0 and qt[k, QT_MMU_PAUSED] == 0:
            if qt[k, QT_HDRM] > 0 or _shared_used(qt, ci, k) >= _pfc_threshold(pt, nt, ci, ip):
                _send_pfc(pt, qt, pk, kick, ci, st, ip, q, 1)
                qt[k, QT_MMU_PAUSED] = 1
    pk[i, PK_INPORT] = ip
    _enqueue(pt, qt, pk, e, q, i)
    _kick(pt, kick, st, e)


@njit(cache=True, _nrt=False)
def _switch_dequeue_transmit(pt, ptf, qt, nt, pk, kick, qn, qw, qm, hs, hpos, ci, st, p):
    """QbbNetDevice::DequeueAndTransmit at a switch: strict queue 0, round-robin over the others
    (BEgressQueue::DequeueRR), then SwitchNotifyDequeue (MMU release, ECN mark at dequeue, RESUME,
    INT) and TransmitStart."""
    base = p * NQ
    q = -1
    if qt[base, QT_HEAD] != NONE:
        q = 0
    else:
        last = pt[p, PT_RRLAST]
        for j in range(1, NQ + 1):
            qq = (j + last) % NQ
            if qt[base + qq, QT_PAUSED] == 0 and qt[base + qq, QT_HEAD] != NONE:
                q = qq
                break
    if q < 0:
        return
    i = _dequeue(pt, qt, pk, p, q)
    size = pk[i, PK_SIZE]
    if q != 0:
        pt[p, PT_RRLAST] = q
        ip = pk[i, PK_INPORT]
        k = ip * NQ + q
        # RemoveFromIngressAdmission / RemoveFromEgressAdmission
        hd = qt[k, QT_HDRM]
        from_hdrm = hd if hd < size else size
        over = qt[k, QT_INGRESS] - ci[CI_RESERVE]
        if over < 0:
            over = 0
        rest = size - from_hdrm
        qt[k, QT_HDRM] -= from_hdrm
        qt[k, QT_INGRESS] -= rest
        nt[pt[ip, PT_NODE], NT_SHARED_USED] -= rest if rest < over else over
        ek = base + q
        qt[ek, QT_EGRESS] -= size
        # ECN: SwitchMmu::ShouldSendCN on the queue this packet left
        if ci[CI_ECN] != 0:
            eb = qt[ek, QT_EGRESS]
            kmin = pt[p, PT_KMIN]
            kmax = pt[p, PT_KMAX]
            mark = False
            if eb > kmax:
                mark = True
            elif eb > kmin:
                if _ecn_uniform(ci, st) < ptf[p, PTF_PMAX] * (eb - kmin) / (kmax - kmin):
                    mark = True
            if mark:
                pk[i, PK_FLAGS] |= FLAG_CE
                st[ST_ECN_MARKS] += 1
        # CheckAndSendResume
        if qt[k, QT_MMU_PAUSED] != 0:
            su = _shared_used(qt, ci, k)
            if qt[k, QT_HDRM] == 0 and (su == 0 or su + ci[CI_RESUME_OFFSET] <= _pfc_threshold(pt, nt, ci, ip)):
                _send_pfc(pt, qt, pk, kick, ci, st, ip, q, 0)
                qt[k, QT_MMU_PAUSED] = 0
    if pk[i, PK_KIND] == KIND_DATA and ci[CI_CC_MODE] == CC_HPCC:
        # IntHeader::PushHop, with the reference's field widths; past 5 hops it wraps around
        h = pk[i, PK_NHOP]
        multi = ci[CI_INT_MULTI]
        pk[i, PK_INT + h % MAXHOP] = (
            st[ST_NOW] % INT_TIME_MOD
            | ((pt[p, PT_TXBYTES] // (INT_BYTE_UNIT * multi)) % INT_BYTES_MOD) << INT_BYTES_SHIFT
            | ((pt[p, PT_QBYTES] // (INT_QLEN_UNIT * multi)) % INT_QLEN_MOD) << INT_QLEN_SHIFT
            | pt[p, PT_RATE_IDX] << INT_RATE_SHIFT
        )
        pk[i, PK_NHOP] = h + 1
    pt[p, PT_TXBYTES] += size
    _transmit_start(pt, pk, qn, qw, qm, hs, hpos, ci, st, p, i)


# ------------------------------------------------------------------ host NIC -------------------


@njit(cache=True, _nrt=False)
def _win_bound(ft, ff, ci, f):
    """RdmaQueuePair::IsWinBound."""
    w = ft[f, FT_WIN]
    if w == 0:
        return False
    if ci[CI_VAR_WIN] != 0:
        w = w * np.int64(ff[f, FF_RATE]) // np.int64(ff[f, FF_MAX_RATE])
        if w == 0:
            w = 1
    return ft[f, FT_SND_NXT] - ft[f, FT_SND_UNA] >= w


@njit(cache=True, _nrt=False)
def _host_dequeue_transmit(pt, qt, ht, ft, ff, pk, qpl, qn, qw, qm, hs, hpos, ci, st, h):
    """QbbNetDevice::DequeueAndTransmit at a host: ACK queue first, then round-robin over QPs
    (RdmaEgressQueue::GetNextQindex, including its compaction of finished QPs)."""
    p = ht[h, HT_PORT]
    now = st[ST_NOW]
    base = p * NQ
    if qt[base + ci[CI_ACK_Q_IDX], QT_PAUSED] == 0 and qt[base, QT_HEAD] != NONE:
        i = _dequeue(pt, qt, pk, p, 0)
        _transmit_start(pt, pk, qn, qw, qm, hs, hpos, ci, st, p, i)
        return
    off = ht[h, HT_QP_OFF]
    n = ht[h, HT_QP_COUNT]
    res = -1
    min_finish = n
    last = ht[h, HT_RRLAST]
    for j in range(1, n + 1):
        idx = (j + last) % n
        f = qpl[off + idx]
        if qt[base + ft[f, FT_PG], QT_PAUSED] == 0 and ft[f, FT_SIZE] > ft[f, FT_SND_NXT] and not _win_bound(ft, ff, ci, f):
            if ft[f, FT_NEXT_AVAIL] > now:
                continue
            res = idx
            break
        elif ft[f, FT_SND_UNA] >= ft[f, FT_SIZE]:
            if idx < min_finish:
                min_finish = idx
    if min_finish < n:  # drop finished QPs, keeping order
        nxt = min_finish
        for j in range(min_finish + 1, n):
            f = qpl[off + j]
            if ft[f, FT_SND_UNA] < ft[f, FT_SIZE]:
                if j == res:
                    res = nxt
                qpl[off + nxt] = f
                nxt += 1
        ht[h, HT_QP_COUNT] = nxt
    if res >= 0:
        f = qpl[off + res]
        ht[h, HT_RRLAST] = res
        # RdmaHw::GetNxtPacket
        left = ft[f, FT_SIZE] - ft[f, FT_SND_NXT]
        payload = ci[CI_PAYLOAD] if left > ci[CI_PAYLOAD] else left
        i = _alloc(pk, st)
        pk[i, PK_KIND] = KIND_DATA
        pk[i, PK_FLOW] = f
        pk[i, PK_SEQ] = ft[f, FT_SND_NXT]
        pk[i, PK_PAYLOAD] = payload
        pk[i, PK_SIZE] = payload + ci[CI_DATA_HDR]
        pk[i, PK_QUEUE] = ft[f, FT_PG]
        pk[i, PK_HOP] = 1  # paths[0] is this NIC's own port
        ft[f, FT_SND_NXT] += payload
        ft[f, FT_PKTS_SENT] += 1
        _transmit_start(pt, pk, qn, qw, qm, hs, hpos, ci, st, p, i)
        # RdmaHw::PktSent / UpdateNextAvail
        ft[f, FT_LAST_PKT] = pk[i, PK_SIZE]
        r = np.int64(ff[f, FF_RATE]) if ci[CI_RATE_BOUND] != 0 else np.int64(ff[f, FF_MAX_RATE])
        ft[f, FT_NEXT_AVAIL] = now + _tx_ns(pk[i, PK_SIZE], r)
        if ci[CI_RTO_NS] > 0:
            s = qp_slot(ci, f, T_RTO)
            if qn[s, QN_WHERE] < 0:
                q_set(qn, qw, qm, hs, hpos, s, now + ci[CI_RTO_NS], next_seq(st))
        return
    # nothing eligible: wake up when the earliest paced QP with bytes left may send
    t = NEVER
    for j in range(ht[h, HT_QP_COUNT]):
        f = qpl[off + j]
        if ft[f, FT_SIZE] > ft[f, FT_SND_NXT] and ft[f, FT_NEXT_AVAIL] < t:
            t = ft[f, FT_NEXT_AVAIL]
    ws = 2 * ci[CI_N_PORTS] + h
    if qn[ws, QN_WHERE] < 0 and t < NEVER and t > now:
        q_set(qn, qw, qm, hs, hpos, ws, t, next_seq(st))


@njit(cache=True, _nrt=False)
def _change_rate(nt, ft, ff, qn, qw, qm, hs, hpos, ci, st, f, new_rate):
    """RdmaHw::ChangeRate (HPCC): shift the QP's next send time, pull the NIC wake-up earlier."""
    old = _tx_ns(ft[f, FT_LAST_PKT], np.int64(ff[f, FF_RATE]))
    new = _tx_ns(ft[f, FT_LAST_PKT], np.int64(new_rate))
    ft[f, FT_NEXT_AVAIL] += new - old
    ws = 2 * ci[CI_N_PORTS] + nt[ft[f, FT_SRC], NT_HOST]
    if qn[ws, QN_WHERE] >= 0 and ft[f, FT_NEXT_AVAIL] < qn[ws, QN_TIME]:
        t = ft[f, FT_NEXT_AVAIL]
        if t < st[ST_NOW]:
            t = st[ST_NOW]
        q_set(qn, qw, qm, hs, hpos, ws, t, next_seq(st))
    ff[f, FF_RATE] = new_rate


# ------------------------------------------------------------------ DCQCN (Mellanox) -----------


@njit(cache=True, _nrt=False)
def _cnp_received(ft, ff, qn, qw, qm, hs, hpos, ci, cf, st, f):
    """RdmaHw::cnp_received_mlx."""
    ft[f, FT_ALPHA_CNP] = 1
    ft[f, FT_DEC_CNP] = 1
    if ft[f, FT_FIRST_CNP] != 0:
        now = st[ST_NOW]
        ff[f, FF_ALPHA] = 1.0
        ft[f, FT_ALPHA_CNP] = 0
        q_set(qn, qw, qm, hs, hpos, qp_slot(ci, f, T_ALPHA), now + ci[CI_ALPHA_NS], next_seq(st))
        # +1 ns so that the rate decrease runs after the alpha update
        q_set(qn, qw, qm, hs, hpos, qp_slot(ci, f, T_DEC), now + ci[CI_DEC_NS] + 1, next_seq(st))
        r = np.floor(cf[CF_RATE_FIRST_CNP] * ff[f, FF_RATE])
        ff[f, FF_RATE] = r
        ff[f, FF_TARGET] = r
        ft[f, FT_FIRST_CNP] = 0


@njit(cache=True, _nrt=False)
def _dcqcn_timer(ft, ff, qn, qw, qm, hs, hpos, ci, cf, st, f, k):
    """UpdateAlphaMlx / CheckRateDecreaseMlx / RateIncEventTimerMlx.  Rate changes take effect
    at the next pacing decision (DCQCN does not call ChangeRate)."""
    now = st[ST_NOW]
    g = cf[CF_EWMA]
    if k == T_ALPHA:
        if ft[f, FT_ALPHA_CNP] != 0:
            ff[f, FF_ALPHA] = (1.0 - g) * ff[f, FF_ALPHA] + g
        else:
            ff[f, FF_ALPHA] = (1.0 - g) * ff[f, FF_ALPHA]
        ft[f, FT_ALPHA_CNP] = 0
        q_set(qn, qw, qm, hs, hpos, qp_slot(ci, f, T_ALPHA), now + ci[CI_ALPHA_NS], next_seq(st))
    elif k == T_DEC:
        q_set(qn, qw, qm, hs, hpos, qp_slot(ci, f, T_DEC), now + ci[CI_DEC_NS], next_seq(st))
        if ft[f, FT_DEC_CNP] != 0:
            if ci[CI_CLAMP] != 0 or ft[f, FT_RP_STAGE] != 0:
                ff[f, FF_TARGET] = ff[f, FF_RATE]
            r = np.floor(ff[f, FF_RATE] * (1.0 - ff[f, FF_ALPHA] / 2.0))
            ff[f, FF_RATE] = r if r > cf[CF_MIN_RATE] else cf[CF_MIN_RATE]
            ft[f, FT_RP_STAGE] = 0
            ft[f, FT_DEC_CNP] = 0
            q_set(qn, qw, qm, hs, hpos, qp_slot(ci, f, T_RP), now + ci[CI_RP_NS], next_seq(st))
    else:  # T_RP: fast recovery, then additive, then hyper increase
        q_set(qn, qw, qm, hs, hpos, qp_slot(ci, f, T_RP), now + ci[CI_RP_NS], next_seq(st))
        stage = ft[f, FT_RP_STAGE]
        if stage == ci[CI_FAST_RECOVERY]:
            t = ff[f, FF_TARGET] + cf[CF_RATE_AI]
            ff[f, FF_TARGET] = t if t < ff[f, FF_MAX_RATE] else ff[f, FF_MAX_RATE]
        elif stage > ci[CI_FAST_RECOVERY]:
            t = ff[f, FF_TARGET] + cf[CF_RATE_HAI]
            ff[f, FF_TARGET] = t if t < ff[f, FF_MAX_RATE] else ff[f, FF_MAX_RATE]
        ff[f, FF_RATE] = np.floor(ff[f, FF_RATE] / 2.0) + np.floor(ff[f, FF_TARGET] / 2.0)
        ft[f, FT_RP_STAGE] = stage + 1


# ------------------------------------------------------------------ HPCC ------------------------


@njit(cache=True, _nrt=False)
def _hpcc_update(nt, ft, ff, fh, fhf, pk, qn, qw, qm, hs, hpos, ci, cf, st, scr, f, i, fast_react):
    """RdmaHw::UpdateRateHp (rate form; MULTI_RATE 0 or 1).  ``scr`` is scratch: per hop,
    updated flag [0:5], new rate [5:10], new stage [10:15]."""
    next_seq = ft[f, FT_SND_NXT]
    nhop = pk[i, PK_NHOP]
    if ft[f, FT_LAST_UPD] == 0:  # first RTT: remember the INT
        ft[f, FT_LAST_UPD] = next_seq
        for j in range(min(nhop, MAXHOP)):
            fh[f, FH_INT + j] = pk[i, PK_INT + j]
        return
    if nhop > MAXHOP:  # the reference skips an overflowed INT stack (more than 5 switches)
        if not fast_react and next_seq > ft[f, FT_LAST_UPD]:
            ft[f, FT_LAST_UPD] = next_seq
        return
    multi = ci[CI_INT_MULTI]
    T = ft[f, FT_BASE_RTT]
    win = ft[f, FT_WIN]
    max_rate = ff[f, FF_MAX_RATE]
    multi_rate = ci[CI_MULTI_RATE] != 0
    U = 0.0
    dt = 0
    updated_any = False
    for j in range(nhop):
        scr[j] = 0.0
        w = pk[i, PK_INT + j]
        w0 = fh[f, FH_INT + j]
        qlen = ((w >> INT_QLEN_SHIFT) & (INT_QLEN_MOD - 1)) * INT_QLEN_UNIT * multi
        if ci[CI_SAMPLE_FEEDBACK] != 0 and qlen == 0 and fast_react:
            continue
        scr[j] = 1.0
        updated_any = True
        tau = ((w & (INT_TIME_MOD - 1)) - (w0 & (INT_TIME_MOD - 1))) % INT_TIME_MOD
        db = (((w >> INT_BYTES_SHIFT) & (INT_BYTES_MOD - 1)) - ((w0 >> INT_BYTES_SHIFT) & (INT_BYTES_MOD - 1))) % INT_BYTES_MOD
        line = float(ci[CI_RATE_TABLE + ((w >> INT_RATE_SHIFT) & 7)])
        prev_qlen = ((w0 >> INT_QLEN_SHIFT) & (INT_QLEN_MOD - 1)) * INT_QLEN_UNIT * multi
        qmin = qlen if qlen < prev_qlen else prev_qlen
        u = 0.0
        if tau > 0:
            u = (db * INT_BYTE_UNIT * multi) * 8.0 / (tau * 1e-9) / line
        if win > 0:
            u += qmin * max_rate / line / win
        if not multi_rate:
            if u > U:
                U = u
                dt = tau
        else:
            tt = tau if tau < T else T
            fhf[f, FHF_U + j] = (fhf[f, FHF_U + j] * (T - tt) + u * tt) / T
        fh[f, FH_INT + j] = w
    min_rate = cf[CF_MIN_RATE]
    rai = cf[CF_RATE_AI]
    eta = cf[CF_U_TARGET]
    new_rate = 0.0
    new_stage = 0
    if not multi_rate:
        if updated_any:
            if dt > T:
                dt = T
            ff[f, FF_U] = (ff[f, FF_U] * (T - dt) + U * dt) / T
            c = ff[f, FF_U] / eta
            if c >= 1.0 or ft[f, FT_INC_STAGE] >= ci[CI_MI_THRESH]:
                new_rate = np.floor(ff[f, FF_CUR_RATE] / c) + rai
                new_stage = 0
            else:
                new_rate = ff[f, FF_CUR_RATE] + rai
                new_stage = ft[f, FT_INC_STAGE] + 1
            if new_rate < min_rate:
                new_rate = min_rate
            if new_rate > max_rate:
                new_rate = max_rate
    else:
        new_rate = max_rate
        for j in range(nhop):
            if scr[j] != 0.0:
                c = fhf[f, FHF_U + j] / eta
                if c >= 1.0 or fh[f, FH_STAGE + j] >= ci[CI_MI_THRESH]:
                    r = np.floor(fhf[f, FHF_RC + j] / c) + rai
                    scr[10 + j] = 0
                else:
                    r = fhf[f, FHF_RC + j] + rai
                    scr[10 + j] = fh[f, FH_STAGE + j] + 1
                if r < min_rate:
                    r = min_rate
                if r > max_rate:
                    r = max_rate
                scr[5 + j] = r
                if r < new_rate:
                    new_rate = r
            elif fhf[f, FHF_RC + j] < new_rate:
                new_rate = fhf[f, FHF_RC + j]
    if updated_any:
        _change_rate(nt, ft, ff, qn, qw, qm, hs, hpos, ci, st, f, new_rate)
    if not fast_react:
        if updated_any:
            ff[f, FF_CUR_RATE] = new_rate
            ft[f, FT_INC_STAGE] = new_stage
        if multi_rate:
            for j in range(nhop):
                if scr[j] != 0.0:
                    fhf[f, FHF_RC + j] = scr[5 + j]
                    fh[f, FH_STAGE + j] = np.int64(scr[10 + j])
        if next_seq > ft[f, FT_LAST_UPD]:
            ft[f, FT_LAST_UPD] = next_seq


# ------------------------------------------------------------------ DCTCP -----------------------


@njit(cache=True, _nrt=False)
def _dctcp_ack(ft, ff, ci, cf, f, ack_seq, cnp):
    """RdmaHw::HandleAckDctcp: alpha once per window of ACKs, at most one cut per window (CWR),
    additive increase once per window otherwise.  Rate changes apply at the next pacing decision."""
    new_batch = False
    if cnp:
        ft[f, FT_ECN_CNT] += 1
    mtu = ci[CI_PAYLOAD]
    if ack_seq > ft[f, FT_LAST_UPD]:
        new_batch = True
        if ft[f, FT_LAST_UPD] == 0:  # first RTT
            ft[f, FT_LAST_UPD] = ft[f, FT_SND_NXT]
            ft[f, FT_BATCH] = ft[f, FT_SND_NXT] // mtu + 1
        else:
            frac = ft[f, FT_ECN_CNT] / ft[f, FT_BATCH]
            if frac > 1.0:
                frac = 1.0
            g = cf[CF_EWMA]
            ff[f, FF_ALPHA] = (1.0 - g) * ff[f, FF_ALPHA] + g * frac
            ft[f, FT_LAST_UPD] = ft[f, FT_SND_NXT]
            ft[f, FT_ECN_CNT] = 0
            ft[f, FT_BATCH] = (ft[f, FT_SND_NXT] - ack_seq) // mtu + 1
    if ft[f, FT_CA_STATE] == 1 and ack_seq > ft[f, FT_HIGH_SEQ]:
        ft[f, FT_CA_STATE] = 0
    if cnp and ft[f, FT_CA_STATE] == 0:
        r = np.floor(ff[f, FF_RATE] * (1.0 - ff[f, FF_ALPHA] / 2.0))
        ff[f, FF_RATE] = r if r > cf[CF_MIN_RATE] else cf[CF_MIN_RATE]
        ft[f, FT_CA_STATE] = 1
        ft[f, FT_HIGH_SEQ] = ft[f, FT_SND_NXT]
    if ft[f, FT_CA_STATE] == 0 and new_batch:
        r = ff[f, FF_RATE] + cf[CF_DCTCP_RATE_AI]
        ff[f, FF_RATE] = r if r < ff[f, FF_MAX_RATE] else ff[f, FF_MAX_RATE]


# ------------------------------------------------------------------ RDMA endpoints -------------


@njit(cache=True, _nrt=False)
def _mark_done(ft, st, f):
    """A flow is done now: its finish time and its place in the completion order."""
    ft[f, FT_STATE] = 2
    ft[f, FT_FINISH] = st[ST_NOW]
    ft[f, FT_DONE_IDX] = st[ST_FINISHED]
    st[ST_FINISHED] += 1


@njit(cache=True, _nrt=False)
def _qp_complete(ft, qn, qw, qm, hs, hpos, ci, st, f):
    """RdmaHw::QpComplete: record the completion time, cancel the QP's timers."""
    _mark_done(ft, st, f)
    for k in range(T_START):
        q_remove(qn, qw, qm, hs, hpos, qp_slot(ci, f, k))


@njit(cache=True, _nrt=False)
def _release_successors(ft, succ, qn, qw, qm, hs, hpos, ci, st, f):
    """Flow f has arrived in full: each successor whose predecessors have now all arrived starts
    at the latest predecessor arrival plus its compute gap (never before its own start time)."""
    now = st[ST_NOW]
    for j in range(ft[f, FT_SUCC], ft[f + 1, FT_SUCC] if f + 1 < ft.shape[0] else succ.shape[0]):
        g = succ[j]
        ready = now + ft[g, FT_DELAY]
        if ready > ft[g, FT_READY]:
            ft[g, FT_READY] = ready
        ft[g, FT_PREDS_LEFT] -= 1
        if ft[g, FT_PREDS_LEFT] == 0:
            t = ft[g, FT_READY] if ft[g, FT_READY] > ft[g, FT_START] else ft[g, FT_START]
            q_set(qn, qw, qm, hs, hpos, qp_slot(ci, g, T_START), t, next_seq(st))


@njit(cache=True, _nrt=False)
def _receive_data(pt, qt, nt, ht, ft, pk, succ, kick, qn, qw, qm, hs, hpos, ci, st, i):
    """RdmaHw::ReceiveUdp + ReceiverCheckSeq: accept in order, then ACK (or NACK a gap)."""
    f = pk[i, PK_FLOW]
    now = st[ST_NOW]
    seq = pk[i, PK_SEQ]
    expected = ft[f, FT_RX_EXPECTED]
    x = 0
    if seq == expected:
        ft[f, FT_RX_EXPECTED] = expected + pk[i, PK_PAYLOAD]
        ft[f, FT_BYTES_RX] += pk[i, PK_PAYLOAD]
        if ft[f, FT_RX_EXPECTED] >= ft[f, FT_SIZE] and ft[f, FT_RX_DONE] < 0:
            ft[f, FT_RX_DONE] = now
            _release_successors(ft, succ, qn, qw, qm, hs, hpos, ci, st, f)
        # the reference resets the milestone to L2_ACK_INTERVAL on every packet, so this ACKs
        # every in-order packet; a chunk boundary ACKs too
        if ft[f, FT_RX_EXPECTED] >= ci[CI_ACK_INTERVAL]:
            x = 1
        elif ci[CI_CHUNK] > 0 and ft[f, FT_RX_EXPECTED] % ci[CI_CHUNK] == 0:
            x = 1
    elif seq > expected:
        if now >= ft[f, FT_RX_NACK_TIMER] or ft[f, FT_RX_LAST_NACK] != expected:
            ft[f, FT_RX_NACK_TIMER] = now + ci[CI_NACK_NS]
            ft[f, FT_RX_LAST_NACK] = expected
            if ci[CI_BACK_TO_ZERO] != 0 and ci[CI_CHUNK] > 0:
                ft[f, FT_RX_EXPECTED] = ft[f, FT_RX_EXPECTED] // ci[CI_CHUNK] * ci[CI_CHUNK]
            x = 2
    if x == 0:
        _free(pk, st, i)
        return
    # the data packet becomes its ACK / NACK in place (it carries the INT back)
    pk[i, PK_KIND] = KIND_ACK if x == 1 else KIND_NACK
    pk[i, PK_SEQ] = ft[f, FT_RX_EXPECTED]
    pk[i, PK_FLAGS] = FLAG_CNP if (pk[i, PK_FLAGS] & FLAG_CE) != 0 else 0
    pk[i, PK_SIZE] = ci[CI_ACK_SIZE]
    pk[i, PK_PAYLOAD] = 0
    pk[i, PK_HOP] = 1
    p = ht[nt[ft[f, FT_DST], NT_HOST], HT_PORT]
    _enqueue(pt, qt, pk, p, 0, i)
    _kick(pt, kick, st, p)


@njit(cache=True, _nrt=False)
def _receive_ack(pt, nt, ht, ft, ff, fh, fhf, pk, kick, qn, qw, qm, hs, hpos, ci, cf, st, scr, i):
    """RdmaHw::ReceiveAck."""
    f = pk[i, PK_FLOW]
    if ft[f, FT_STATE] != 1:  # the reference deleted the QP: a late ACK is ignored
        _free(pk, st, i)
        return
    seq = pk[i, PK_SEQ]
    if ci[CI_BACK_TO_ZERO] != 0 and ci[CI_CHUNK] > 0:
        seq = seq // ci[CI_CHUNK] * ci[CI_CHUNK]
    progressed = seq > ft[f, FT_SND_UNA]
    if progressed:
        ft[f, FT_SND_UNA] = seq
    if ft[f, FT_SND_UNA] >= ft[f, FT_SIZE]:
        _qp_complete(ft, qn, qw, qm, hs, hpos, ci, st, f)
    if pk[i, PK_KIND] == KIND_NACK:
        ft[f, FT_SND_NXT] = ft[f, FT_SND_UNA]
    active = ft[f, FT_STATE] == 1
    cc = ci[CI_CC_MODE]
    if active and cc == CC_DCQCN and (pk[i, PK_FLAGS] & FLAG_CNP) != 0:
        _cnp_received(ft, ff, qn, qw, qm, hs, hpos, ci, cf, st, f)
    if active and cc == CC_DCTCP:
        _dctcp_ack(ft, ff, ci, cf, f, pk[i, PK_SEQ], (pk[i, PK_FLAGS] & FLAG_CNP) != 0)
    if active and cc == CC_HPCC:
        if pk[i, PK_SEQ] > ft[f, FT_LAST_UPD]:
            _hpcc_update(nt, ft, ff, fh, fhf, pk, qn, qw, qm, hs, hpos, ci, cf, st, scr, f, i, False)
        elif ci[CI_FAST_REACT] != 0:
            _hpcc_update(nt, ft, ff, fh, fhf, pk, qn, qw, qm, hs, hpos, ci, cf, st, scr, f, i, True)
    if active and progressed and ci[CI_RTO_NS] > 0:
        q_set(qn, qw, qm, hs, hpos, qp_slot(ci, f, T_RTO), st[ST_NOW] + ci[CI_RTO_NS], next_seq(st))
    _free(pk, st, i)
    _kick(pt, kick, st, ht[nt[ft[f, FT_SRC], NT_HOST], HT_PORT])


@njit(cache=True, _nrt=False)
def _pfc_received(pt, qt, nt, pk, kick, st, pfc, p, i):
    """QbbNetDevice::Receive of a PFC frame at the device of port p: pause or resume a queue."""
    q = pk[i, PK_QUEUE]
    pause = pk[i, PK_SEQ]
    qt[p * NQ + q, QT_PAUSED] = pause
    n = st[ST_NPFC]
    node = pt[p, PT_NODE]
    pfc[n, 0] = st[ST_NOW]
    pfc[n, 1] = node
    pfc[n, 2] = nt[node, NT_IS_SWITCH]
    pfc[n, 3] = pt[p, PT_IFINDEX]
    pfc[n, 4] = pause
    st[ST_NPFC] = n + 1
    if pause == 1:
        st[ST_PAUSES] += 1
    else:
        _kick(pt, kick, st, p)


# ------------------------------------------------------------------ flows ----------------------


@njit(cache=True, _nrt=False)
def _start_flow(pt, nt, ht, ft, ff, fhf, qpl, kick, ci, st, f):
    """RdmaHw::AddQueuePair + QbbNetDevice::NewQp."""
    h = nt[ft[f, FT_SRC], NT_HOST]
    qpl[ht[h, HT_QP_OFF] + ht[h, HT_QP_COUNT]] = f
    ht[h, HT_QP_COUNT] += 1
    ft[f, FT_STATE] = 1
    ft[f, FT_START] = st[ST_NOW]  # a released flow starts later than its earliest start
    line = ff[f, FF_MAX_RATE]
    ff[f, FF_RATE] = line
    ff[f, FF_TARGET] = line
    ff[f, FF_CUR_RATE] = line
    if ci[CI_CC_MODE] == CC_HPCC and ci[CI_MULTI_RATE] != 0:
        for j in range(MAXHOP):
            fhf[f, FHF_RC + j] = line
    ft[f, FT_NEXT_AVAIL] = st[ST_NOW]
    _kick(pt, kick, st, ht[h, HT_PORT])


@njit(cache=True, _nrt=False)
def _virtual_flow_event(ft, succ, qn, qw, qm, hs, hpos, ci, st, f):
    """A flow that does not cross the packet network (a compute op, a copy inside a server): it
    starts, then after its duration it is done and releases its successors."""
    now = st[ST_NOW]
    if ft[f, FT_STATE] == 0:
        ft[f, FT_STATE] = 1
        ft[f, FT_START] = now
        q_set(qn, qw, qm, hs, hpos, qp_slot(ci, f, T_START), now + ft[f, FT_VIRTUAL], next_seq(st))
        return
    _mark_done(ft, st, f)
    ft[f, FT_RX_DONE] = now
    ft[f, FT_BYTES_RX] = ft[f, FT_SIZE]
    _release_successors(ft, succ, qn, qw, qm, hs, hpos, ci, st, f)


# ------------------------------------------------------------------ the loop -------------------


@njit(cache=True, _nrt=False, inline="always")
def _drain_kicks(pt, ptf, qt, nt, ht, ft, ff, pk, qpl, kick, qn, qw, qm, hs, hpos, ci, st):
    nk = kick.shape[0]
    while st[ST_KICK_N] > 0:
        p = kick[st[ST_KICK_HEAD]]
        st[ST_KICK_HEAD] = (st[ST_KICK_HEAD] + 1) % nk
        st[ST_KICK_N] -= 1
        pt[p, PT_KICKED] = 0
        if pt[p, PT_FROZEN] != 0:  # its partition is being fast-forwarded; it is kicked at thaw
            continue
        if not _port_ready(pt, qn, st, p):
            # busy: make sure its transmit-complete fires (switch ports skip it when idle)
            if qn[p, QN_WHERE] < 0 and pt[p, PT_QPKTS] > 0:
                q_set(qn, qw, qm, hs, hpos, p, pt[p, PT_BUSY_UNTIL], pt[p, PT_TXDONE_SEQ])
            continue
        if pt[p, PT_IS_HOST] != 0:
            _host_dequeue_transmit(pt, qt, ht, ft, ff, pk, qpl, qn, qw, qm, hs, hpos, ci, st, nt[pt[p, PT_NODE], NT_HOST])
        else:
            _switch_dequeue_transmit(pt, ptf, qt, nt, pk, kick, qn, qw, qm, hs, hpos, ci, st, p)


@njit(cache=True, _nrt=False)
def run(pt, ptf, qt, nt, ht, ft, ff, fh, fhf, pk, paths, succ, order, qpl, kick, qn, qw, qm, hs, hpos, ci, cf, st, pfc, scr,
        wp, wl, sr, wsi, wsf, ml, max_events):
    """Process events until none is left, the stop time passes, ``max_events`` have run, or the
    packet pool / PFC log must grow.  Returns a ``RUN_*`` code.  All state stays in the arrays,
    so a call can be resumed."""
    n_ports = ci[CI_N_PORTS]
    n_hosts = ci[CI_N_HOSTS]
    flow_slot = 2 * n_ports + n_hosts
    qp_base = flow_slot + 1
    n_roots = order.shape[0]  # flows without predecessors, by start time
    wh_on = ci[CI_WH] != 0
    wh_sample = sample_slot(ci, ft.shape[0])
    stop = ci[CI_STOP]
    done = 0
    while True:
        if done >= max_events:
            return RUN_BUDGET
        if st[ST_NFREE] < FREE_MARGIN or st[ST_NPFC] + 64 > pfc.shape[0]:
            return RUN_GROW
        slot, t, s = q_pop(qn, qw, qm, hs, hpos)
        if st[ST_ML_N] > 0 and (slot < 0 or t > st[ST_NOW]):
            # the memo log has records and this instant is complete: the memo looks at its
            # partitions before time moves on (after every flow starting at this ns has joined)
            if slot >= 0:
                q_set(qn, qw, qm, hs, hpos, slot, t, s)
            return RUN_MEMO
        if slot < 0:
            return RUN_DONE
        if t > stop:  # leave it pending: a later call with a later stop time resumes here
            q_set(qn, qw, qm, hs, hpos, slot, t, s)
            return RUN_DONE
        st[ST_NOW] = t
        st[ST_CUR_SEQ] = s
        done += 1
        st[ST_EVENTS] += 1
        if slot < n_ports:  # transmit complete
            if pt[slot, PT_IS_HOST] != 0:
                _host_dequeue_transmit(pt, qt, ht, ft, ff, pk, qpl, qn, qw, qm, hs, hpos, ci, st, nt[pt[slot, PT_NODE], NT_HOST])
            else:
                _switch_dequeue_transmit(pt, ptf, qt, nt, pk, kick, qn, qw, qm, hs, hpos, ci, st, slot)
        elif slot < 2 * n_ports:  # the head packet of a link arrives
            lp = slot - n_ports
            i = pt[lp, PT_LN_HEAD]
            j = pk[i, PK_NEXT]
            pt[lp, PT_LN_HEAD] = j
            if j == NONE:
                pt[lp, PT_LN_TAIL] = NONE
            else:
                q_set(qn, qw, qm, hs, hpos, slot, pk[j, PK_ARRIVE], pk[j, PK_EVSEQ])
            ip = pt[lp, PT_PEER]
            if ptf[lp, PTF_ERROR] > 0.0 and _rand(st) < ptf[lp, PTF_ERROR]:
                st[ST_DROPS] += 1
                _free(pk, st, i)
            elif pk[i, PK_KIND] == KIND_PFC:
                _pfc_received(pt, qt, nt, pk, kick, st, pfc, ip, i)
                _free(pk, st, i)
            elif pt[ip, PT_IS_HOST] == 0:
                _switch_receive(pt, qt, nt, ft, pk, paths, kick, ci, st, ip, i)
            elif pk[i, PK_KIND] == KIND_DATA:
                _receive_data(pt, qt, nt, ht, ft, pk, succ, kick, qn, qw, qm, hs, hpos, ci, st, i)
            else:
                f = pk[i, PK_FLOW]
                _receive_ack(pt, nt, ht, ft, ff, fh, fhf, pk, kick, qn, qw, qm, hs, hpos, ci, cf, st, scr, i)
                if wh_on and ft[f, FT_STATE] == 2 and ft[f, FT_PART] >= 0:
                    wh.flow_finished(pt, ft, paths, ci, st, wp, wl, wsi, ml, f)
        elif slot < flow_slot:  # a NIC wakes up
            h = slot - 2 * n_ports
            if _port_ready(pt, qn, st, ht[h, HT_PORT]):
                _host_dequeue_transmit(pt, qt, ht, ft, ff, pk, qpl, qn, qw, qm, hs, hpos, ci, st, h)
        elif slot == flow_slot:  # flows starting now, in file order (ScheduleFlowInputs)
            while st[ST_NEXT_FLOW] < n_roots:
                f = order[st[ST_NEXT_FLOW]]
                if ft[f, FT_START] != t:
                    break
                st[ST_NEXT_FLOW] += 1
                if ft[f, FT_VIRTUAL] >= 0:
                    _virtual_flow_event(ft, succ, qn, qw, qm, hs, hpos, ci, st, f)
                    continue
                # third.cc installs a client application: its Initialize, then its StartApplication
                # (which creates the QP) run as two later events of this nanosecond, after events
                # already pending at it (a NIC's transmit-complete, say)
                ft[f, FT_LAUNCH_HOPS] = 1
                q_set(qn, qw, qm, hs, hpos, qp_slot(ci, f, T_START), t, next_seq(st))
            if st[ST_NEXT_FLOW] < n_roots:
                f = order[st[ST_NEXT_FLOW]]
                q_set(qn, qw, qm, hs, hpos, flow_slot, ft[f, FT_START], next_seq(st))
        elif slot < wh_sample:  # a QP timer
            k = (slot - qp_base) % FLOW_SLOTS
            f = (slot - qp_base) // FLOW_SLOTS
            if k == T_START:
                if ft[f, FT_VIRTUAL] >= 0:
                    _virtual_flow_event(ft, succ, qn, qw, qm, hs, hpos, ci, st, f)
                elif ft[f, FT_LAUNCH_HOPS] > 0:  # Application::Initialize: schedule StartApplication
                    ft[f, FT_LAUNCH_HOPS] -= 1
                    q_set(qn, qw, qm, hs, hpos, slot, t, next_seq(st))
                else:
                    if wh_on:
                        wh.flow_started(pt, qt, nt, ft, ff, fh, pk, paths, kick, qn, qw, qm, hs, hpos, ci, st, wp, wl, ml, f)
                    _start_flow(pt, nt, ht, ft, ff, fhf, qpl, kick, ci, st, f)
            elif k == T_RTO:
                if ft[f, FT_STATE] == 1 and ft[f, FT_SND_UNA] < ft[f, FT_SND_NXT]:
                    st[ST_TIMEOUTS] += 1
                    ft[f, FT_SND_NXT] = ft[f, FT_SND_UNA]  # go back N
                    _kick(pt, kick, st, ht[nt[ft[f, FT_SRC], NT_HOST], HT_PORT])
                    q_set(qn, qw, qm, hs, hpos, slot, t + ci[CI_RTO_NS], next_seq(st))
            else:
                _dcqcn_timer(ft, ff, qn, qw, qm, hs, hpos, ci, cf, st, f, k)
        elif slot == wh_sample:  # wormhole: sample rates, freeze steady partitions
            st[ST_WH_EVENTS] += 1
            wh.sample(pt, nt, ft, ff, paths, qn, qw, qm, hs, hpos, ci, cf, st, wp, wl, sr, wsf, ml)
        else:  # wormhole: a frozen partition's jump ends as planned
            st[ST_WH_EVENTS] += 1
            wh.thaw(pt, qt, nt, ft, ff, fh, pk, paths, kick, qn, qw, qm, hs, hpos, ci, st, wp, wl, ml, slot - wh_sample - 1)
        if st[ST_KICK_N] > 0:
            _drain_kicks(pt, ptf, qt, nt, ht, ft, ff, pk, qpl, kick, qn, qw, qm, hs, hpos, ci, st)
