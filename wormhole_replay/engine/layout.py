"""The columns of the engine's tables and the indices into its configuration and scalars.

The tables are grouped by owner in ``tables``; a constant's prefix names its table: ``PT_``
``net.ports``, ``PTF_`` ``net.port_probs``, ``QT_`` ``net.queues``, ``NT_`` ``net.nodes``, ``HT_``
``net.hosts``, ``PK_`` ``net.packets``, ``FT_`` ``flows.table``, ``FF_`` ``flows.rates``, ``FH_`` /
``FHF_`` ``flows.hops`` / ``flows.hop_rates``, ``CI_`` / ``CF_`` ``cfg.ints`` / ``cfg.floats``,
``ST_`` the ``state`` scalars, ``WP_`` ``parts.table``, ``ML_`` ``parts.memo_log``.  Integer
constants here are compile-time constants inside the kernels.
"""

MAXHOP = 5
NQ = 8

# --- ports: net.ports int64[P, PT_LEN], net.port_probs float64[P, PTF_LEN] -------------------------
PT_NODE = 0  # node that owns this egress port
PT_PEER = 1  # port at the other end of the link
PT_RATE = 2  # bps
PT_DELAY = 3  # ns
PT_IFINDEX = 4  # ns-3 interface index (pfc.txt)
PT_IS_HOST = 5
PT_HEADROOM = 6  # PFC headroom bytes (switch ingress)
PT_PFC_SHIFT = 7  # dynamic threshold shift, alpha = 2^-shift
PT_KMIN = 8  # ECN bytes
PT_KMAX = 9
PT_BUSY_UNTIL = 10  # end of the current serialisation
PT_TXDONE_SEQ = 11  # seq reserved for its transmit-complete event
PT_RRLAST = 12  # round-robin pointer over queues
PT_TXBYTES = 13  # cumulative bytes sent (INT)
PT_QBYTES = 14  # bytes in all egress queues (INT qlen)
PT_QPKTS = 15  # packets in all egress queues
PT_LN_HEAD = 16  # packets in flight on the link, FIFO
PT_LN_TAIL = 17
PT_KICKED = 18  # already in the kick FIFO
PT_RATE_IDX = 19  # index of the port's rate in the INT rate table (ci[CI_RATE_TABLE + k])
PT_PART = 20  # wormhole: partition of the port (-1: no active flow crosses it)
PT_NUSE = 21  # active flows whose data or ACK path crosses it
PT_PNEXT = 22  # next / previous port of the same partition (doubly linked list)
PT_PPREV = 23
PT_FROZEN = 24  # its partition is being fast-forwarded: the port neither sends nor is kicked
PT_FLUID = 25  # wormhole: bps its fluid flows take (data or ACKs): packets get the rest of the link
PT_FLUID_BYTES = 26  # ... bytes its fluid flows carried up to PT_FLUID_T (for INT's tx bytes; PT_FLUID_ACC)
PT_FLUID_T = 27
PT_JUMP_BYTES = 28  # wormhole: bytes its link carried during its partition's jumps (credited at thaw; the monitor's tx bytes)
PT_FLUID_ACC = 29  # ... bps its fluid flows add to its byte counter (from when each went fluid to its thaw)
PT_FOREIGN = 30  # wormhole: active flows crossing it (data or ACKs) that the memo did not make timers (FT_MEMO_TIMER)
PT_TIMERS = 31  # wormhole: the memo's timers running whose data or ACK path crosses it (wormhole/timers.py)
PT_TIMERS_DATA = 32  # ... of them whose data path crosses it
PT_TIMERS_GROUPS = 33  # ... the sum of their FT_MEMO_TIMER (with PT_TIMERS_GROUPS_SQ: are they all of one group?)
PT_LIVE_DATA = 34  # wormhole: active packet flows whose data path crosses it (a paced timer's sharers, with PT_TIMERS_DATA)
PT_MEMO_DATA = 35  # wormhole: active packet flows of the memo's (FT_MEMO_TIMER != 0) whose data path crosses it, ...
PT_MEMO_DATA_GROUPS = 36  # ... the sum of their FT_MEMO_TIMER (another group's timer due there is simulated)
PT_TIMERS_GROUPS_SQ = 37  # ... the sums of the squares of those groups (membership.count_data)
PT_MEMO_DATA_GROUPS_SQ = 38
PT_LEN = 39

PTF_ERROR = 0  # per-packet loss probability on arrival over this link
PTF_PMAX = 1
PTF_LEN = 2

# --- egress queues: net.queues int64[P*NQ, QT_LEN]; row p*NQ + q ---------------------------------
QT_HEAD = 0  # linked list of packets (queue 0 of a host port = its ACK queue)
QT_TAIL = 1
QT_PAUSED = 2  # this egress queue is paused by the downstream PFC
QT_INGRESS = 3  # MMU bytes of the switch *ingress* port p, queue q
QT_HDRM = 4
QT_EGRESS = 5  # MMU egress bytes
QT_MMU_PAUSED = 6  # a PAUSE was sent upstream for this ingress queue
QT_LEN = 7

# --- nodes: net.nodes int64[N, NT_LEN] --------------------------------------------------------------
NT_IS_SWITCH = 0
NT_HOST = 1  # host index, -1 for switches
NT_TOTAL_HDRM = 2
NT_TOTAL_RSRV = 3
NT_SHARED_USED = 4
NT_LEN = 5

# --- hosts: net.hosts int64[H, HT_LEN]; net.qp_order is the reference's RdmaQueuePairGroup --------
HT_PORT = 0
HT_QP_OFF = 1  # start of the host's region in qp_list
HT_QP_COUNT = 2
HT_RRLAST = 3
HT_LEN = 4

# --- flows: flows.table int64[F, FT_LEN], flows.rates float64[F, FF_LEN] ----------------------------
FT_SRC = 0
FT_DST = 1
FT_SIZE = 2
FT_START = 3
FT_PG = 4
FT_WIN = 5  # bytes, 0 = no window
FT_BASE_RTT = 6
FT_DPATH = 7  # offset of the data path in path_ports
FT_APATH = 8  # offset of the ACK path
FT_SND_NXT = 9
FT_SND_UNA = 10
FT_NEXT_AVAIL = 11
FT_LAST_PKT = 12
FT_STATE = 13  # 0 waiting, 1 active, 2 finished
FT_FINISH = 14  # ns the last ACK reached the sender, -1
FT_ALPHA_CNP = 15  # DCQCN
FT_DEC_CNP = 16
FT_FIRST_CNP = 17
FT_RP_STAGE = 18
FT_INC_STAGE = 19  # HPCC
FT_LAST_UPD = 20
FT_RX_EXPECTED = 21  # receiver
FT_RX_NACK_TIMER = 22
FT_RX_LAST_NACK = 23
FT_PKTS_SENT = 24  # counters
FT_BYTES_RX = 25
FT_DONE_IDX = 26  # completion order (ties at one ns keep the reference's order)
FT_ECN_CNT = 27  # DCTCP: ECN-echoing ACKs in the current batch
FT_BATCH = 28  # DCTCP: packets in the batch the next alpha update covers
FT_CA_STATE = 29  # DCTCP: 1 while in CWR (one cut per window)
FT_HIGH_SEQ = 30  # DCTCP: snd_nxt at the last cut
FT_PREDS_LEFT = 31  # dependency DAG: predecessors not yet received in full
FT_READY = 32  # latest (predecessor received + FT_DELAY) so far
FT_DELAY = 33  # compute gap between the last predecessor's arrival and this flow's start
FT_SUCC = 34  # offset of the flow's successors in succ (CSR; FT_SUCC of f+1 ends it)
FT_RX_DONE = 35  # ns when the receiver had every byte in order, -1
FT_VIRTUAL = 36  # -1: a network flow; else a duration: a compute op or an intra-server copy
FT_PART = 37  # wormhole: partition of an active network flow, -1 otherwise
FT_PNEXT = 38  # next / previous flow of the same partition
FT_PPREV = 39
FT_NSAMP = 40  # rate samples taken since the flow started or thawed (the first is a base point; ring position)
FT_SAMP_UNA = 41  # snd_una at the previous sample
FT_CREDIT = 42  # bytes credited by the fast-forward being applied (scratch)
FT_SKIPPED = 43  # bytes credited by fast-forwards in all
FT_SAMP_T = 44  # ns of the flow's last rate sample
FT_LAUNCH_HOPS = 45  # scheduling hops left before a flow of the flow file creates its QP
FT_FLUID = 46  # wormhole: 1 while the flow is fluid (fast-forwarded on its own, its ports live)
FT_FLUID_T0 = 47  # ... since when
FT_WSAMP = 48  # rate samples since the flow's neighbourhood (flows sharing its ports) last changed
FT_FLUID_CAP = 49  # longest fluid jump allowed next: doubles each time its re-measured rate holds
FT_WINDOW = 50  # samples of the flat window found at the last rate sample (0: not steady); scratch
FT_BNECK = 51  # the port of its data path that bounds its rate (the most loaded), found at the last sample
FT_FLUID_LAST = 52  # fluid: snd_nxt when it stopped sending (its last packet ends there)
FT_FLUID_FIRST = 53  # ... snd_nxt when it sent again (its first packet starts there)
FT_RESV = 54  # ... hops holding its reservation: bit j data-path hop j, bit 8 + j ACK-path hop j
FT_GROUP = 55  # fluid: the flow whose data group it went fluid with (a fluid pass's union-find while live)
FT_GROUP_PLAN = 56  # fluid pass scratch, at a group's root: its fluid jump (ns), -1 if it may not go fluid
FT_REFLUID = 57  # fluid: 1 if it thawed only because the load around its group moved (a short window may do)
FT_MEMO_TIMER = 58  # != 0: the memo made this network flow a timer, learned with the others of this value (timers.py)
FT_TIMER_AT = 59  # ... while such a timer runs: its place in parts.timers (-1 otherwise)
FT_TIMER_ASIDE = 60  # ... 1: a timer aside, which holds its time and neither takes nor counts as a share (timers.py)
FT_LEN = 61
FLOW_SLOTS = 6  # event slots per flow: QP timers T_ALPHA, T_DEC, T_RP, T_RTO, T_START, T_FLUID

FF_MAX_RATE = 0  # NIC line rate
FF_RATE = 1  # current sending rate
FF_TARGET = 2  # DCQCN
FF_ALPHA = 3  # DCQCN and DCTCP
FF_CUR_RATE = 4  # HPCC
FF_U = 5
FF_STEADY = 6  # wormhole: the steady rate (payload bps) a fast-forward credits
FF_MEMO = 7  # memo: bytes a memoized transient credits over WP_TCONV
FF_FLUID = 8  # wormhole: the payload rate a fluid flow was credited and reserved at
FF_PACE_GAIN = 9  # wormhole: a paced timer's n flows on a link get this times one alone there (timers.pace)
FF_LEN = 10

# --- HPCC per-hop state: flows.hops int64[F or 1, FH_LEN], flows.hop_rates float64[.., FHF_LEN] ----
# An INT hop is one int64 packed like the reference's 64-bit IntHop: time (24 bits, ns),
# tx bytes (20 bits, in 128 B x INT_MULTI), queue length (17 bits, in 80 B x INT_MULTI) and a
# 3-bit line-rate index.
INT_TIME_MOD = 1 << 24
INT_BYTES_MOD = 1 << 20
INT_QLEN_MOD = 1 << 17
INT_BYTES_SHIFT = 24
INT_QLEN_SHIFT = 44
INT_RATE_SHIFT = 61
INT_BYTE_UNIT = 128
INT_QLEN_UNIT = 80
FH_INT = 0  # the last ACK's INT hops
FH_STAGE = MAXHOP
FH_LEN = 2 * MAXHOP
FHF_U = 0
FHF_RC = MAXHOP
FHF_LEN = 2 * MAXHOP

# --- packets: net.packets int64[C, PK_LEN (PK_LEN_INT with HPCC)] ----------------------------------
PK_NEXT = 0  # queue / link list link, or free-list link
PK_KIND = 1
PK_FLOW = 2
PK_SEQ = 3  # data: first byte; ACK: next expected; PFC: 1 pause, 0 resume
PK_SIZE = 4  # wire bytes
PK_PAYLOAD = 5
PK_HOP = 6  # index of the next egress port on the path
PK_FLAGS = 7
PK_INPORT = 8  # ingress port at the current switch
PK_QUEUE = 9  # queue index (priority group)
PK_ARRIVE = 10  # arrival time at the far end of the current link
PK_EVSEQ = 11  # seq of that arrival event
PK_NHOP = 12  # INT hops recorded
PK_LEN = 13
PK_INT = 13  # + hop: packed INT hops (HPCC only)
PK_LEN_INT = 13 + MAXHOP

KIND_DATA = 0
KIND_ACK = 1
KIND_NACK = 2
KIND_PFC = 3

FLAG_CE = 1  # IP ECN congestion experienced
FLAG_CNP = 2  # ACK echoes a CE mark

# --- integer configuration: cfg.ints --------------------------------------------------------------
CC_DCQCN = 1  # values of CI_CC_MODE (the reference's CC_MODE)
CC_HPCC = 3
CC_DCTCP = 8
CI_CC_MODE = 0
CI_PAYLOAD = 1
CI_DATA_HDR = 2  # wire bytes of a data packet beyond its payload (incl. INT)
CI_ACK_SIZE = 3
CI_PFC_SIZE = 4
CI_ACK_INTERVAL = 5
CI_CHUNK = 6
CI_BACK_TO_ZERO = 7
CI_VAR_WIN = 8
CI_FAST_REACT = 9
CI_MI_THRESH = 10
CI_MULTI_RATE = 11
CI_SAMPLE_FEEDBACK = 12
CI_RATE_BOUND = 13
CI_ACK_Q_IDX = 14
CI_ECN = 15
CI_PFC = 16
CI_ALPHA_NS = 17
CI_DEC_NS = 18
CI_RP_NS = 19
CI_FAST_RECOVERY = 20
CI_NACK_NS = 21
CI_STOP = 22
CI_INT_MULTI = 23
CI_CLAMP = 24
CI_RTO_NS = 25
CI_BUFFER = 26
CI_RESERVE = 27
CI_RESUME_OFFSET = 28
CI_WH_CAP = 29  # ns: the first jump after a change is at most this long (then 2x, 4x, ... while confirmed)
CI_N_PORTS = 30
CI_N_HOSTS = 31
CI_RATE_TABLE = 32  # up to 8 link rates (bps) that INT's 3-bit rate field indexes
CI_ECN_RNG = 40  # 0: xorshift64*; 1: ns-3's legacy UniformVariable (one MRG32k3a stream per draw)
CI_MRG_JUMP = 41  # 2 x 9 entries: MRG32k3a's A1, A2 raised to 2^127 (one stream ahead)
CI_WH = 59  # 1: fast-forward steady partitions (wormhole mode); 0: full packet-level simulation
CI_WH_TAU = 60  # ns between rate samples
CI_WH_L = 61  # samples in the steadiness window
CI_WH_TAIL = 62  # ns of a flow's end simulated packet by packet after a fast-forward
CI_WH_MIN_JUMP = 63  # ns: shorter fast-forwards are not worth their bookkeeping
CI_MEMO = 64  # memo log (stop with RUN_MEMO) bits: MEMO_ON partition events, MEMO_SAMPLES rate samples,
# MEMO_SHORT short flat windows, MEMO_EMPTIED partitions emptied; Python sets the last three only
# while it has a use for them
CI_WH_SHORT = 65  # samples that show a steady state where flows cannot contend, or one the memo knows
CI_WH_FLUID = 66  # 1: steady flows inside a partition that is not steady may become fluid (wormhole/fluid)
CI_WH_MEAN = 67  # 1: a contended partition whose shares wander may jump at its window means (mean jumps)
CI_LEN = 68

# --- float configuration: cfg.floats -------------------------------------------------------------
CF_EWMA = 0
CF_RATE_AI = 1
CF_RATE_HAI = 2
CF_MIN_RATE = 3
CF_U_TARGET = 4
CF_RATE_FIRST_CNP = 5
CF_DCTCP_RATE_AI = 6
CF_WH_THETA = 7  # steadiness threshold on (max - min) / mean of the window's rate samples
CF_WH_RELEASER = 8  # a contended jump of a flow that releases others: at most this share of its FCT
CF_LEN = 9

# --- mutable scalars: state ----------------------------------------------------------------------
ST_NOW = 0
ST_SEQ = 1  # next event sequence number
ST_CUR_SEQ = 2  # seq of the event being handled
ST_FREE = 3  # head of the packet free list
ST_NFREE = 4
ST_EVENTS = 5
ST_DROPS = 6
ST_NPFC = 7  # records written to pfc_log
ST_RNG = 8
ST_FINISHED = 9
ST_NEXT_FLOW = 10  # position in start_order of the next flow to start
ST_KICK_HEAD = 11
ST_KICK_N = 12
ST_PKTS_ALIVE = 13
ST_PEAK_PKTS = 14
ST_ECN_MARKS = 15
ST_PAUSES = 16
ST_TIMEOUTS = 17
ST_MRG = 18  # 6 entries: MRG32k3a state of the next ns-3 stream
ST_WH_SEQ = 24  # wormhole events take seqs above all packet events' (WH_SEQ_BASE + n), so that
#                 they never reorder the packet simulation's own same-nanosecond events
ST_WH_FF = 25  # fast-forwards
ST_WH_SKIPBACK = 26  # fast-forwards cut short by a flow arriving on their partition
ST_WH_SKIPPED_NS = 27  # partition-nanoseconds jumped over
ST_WH_EV_SKIPPED = 28  # packet events the credited bytes would have taken (estimate)
ST_WH_NPARTS = 29  # partitions now
ST_WH_PARTS_MAX = 30
ST_WH_NLIVE = 31  # partitions being simulated (the others are frozen)
ST_WH_FREE = 32  # head of the free list of partition rows
ST_WH_SPLITS = 33
ST_WH_MERGES = 34
ST_WH_EVENTS = 35  # SAMPLE and THAW events (counted in ST_EVENTS too)
ST_ML_N = 36  # records in the memo log, handled by Python before the run resumes
ST_WH_MEMO_JUMPS = 37  # jumps over a memoized transient
ST_WH_FLUID = 38  # flows made fluid
ST_WH_FLUID_NOW = 39  # flows fluid now
ST_WH_FLUID_THAWS = 40  # fluid flows thawed before their planned end (a neighbour changed)
ST_WH_MEAN_JUMPS = 41  # fast-forwards at the window's mean rates of shares that wander (jump.stationary)
ST_WH_TIMERS = 42  # the memo's timers running (parts.timers[:n])
ST_WH_TIMERS_THAWED = 43  # ... made packet flows half-way, a foreign flow having started beside them
ST_LEN = 44

# --- wormhole partitions: parts.table int64[K, WP_LEN]; parts.live; parts.samples float64[F, l] ---
WP_STATE = 0  # 0 free, 1 live (simulated packet by packet), 2 frozen (being fast-forwarded)
WP_NFLOWS = 1
WP_FLOWS = 2  # head of its flow list
WP_NPORTS = 3
WP_PORTS = 4  # head of its port list
WP_T0 = 5  # frozen: when the jump began
WP_PLAN = 6  # frozen: when it is planned to end (a flow reaching its tail)
WP_LIVEPOS = 7  # position in wl while live
WP_NEXT_FREE = 8
WP_CAP = 9  # longest jump allowed next: doubles each time a jump's rates are confirmed
WP_FRESH = 10  # 1 if its flows changed since its last jump
WP_GEN = 11  # bumped at every change of its flows: a memo log record is current while it matches
WP_TCONV = 12  # frozen over a memoized transient: its length (ns); 0 for a plain steady jump
WP_NSAMP = 13  # samples taken since its flows last changed (or it thawed): the window is full at l
WP_ALONE = 14  # 1 if no two of its flows share a switch port (see wormhole.alone), 0 if some do, -1 not known yet
WP_LEN = 15

# --- memo log: parts.memo_log int64[M, ML_LEN], ST_ML_N records; read through engine/memo_view.py
ML_KIND = 0  # ML_CHANGED or ML_STEADY
ML_PART = 1
ML_GEN = 2
ML_TIME = 3
ML_LEN = 4
ML_CHANGED = 1  # the partition's flows changed: a transient begins (look it up)
ML_STEADY = 2  # the partition was found steady and froze (store the transient that led here)
ML_SAMPLED = 3  # rates were sampled (ML_PART -1): snapshot the transients being learned
ML_THAWED = 4  # the partition's jump ended (the journal of jumps)
ML_SHORT = 5  # the partition's flows are flat over a short window: a known steady state?
ML_EMPTIED = 6  # the partition's last flow finished (the row is free): the network may be idle
MEMO_ON = 1
MEMO_SAMPLES = 2
MEMO_SHORT = 4
MEMO_EMPTIED = 8
WH_SEQ_BASE = 1 << 60

# --- the memo's timers running: parts.timers int64[K, TM_LEN], ST_WH_TIMERS rows (wormhole/timers.py)
TM_FLOW = 0
TM_ALONE = 1  # its time to its last byte received at its alone pace (a paced timer), else its time (ns)
TM_DONE = 2  # ... of which it had covered by TM_SINCE (ns at that pace)
TM_SINCE = 3  # when it started or its share last changed
TM_SHARERS = 4  # flows' data leaving the busiest port its data leaves (itself included; 1 if unpaced)
TM_BPS = 5  # the rate it reserves of its links (its share of its tightest link, timers._share_bps; 0 if unpaced)
TM_YIELD = 6  # millionths of its share it holds: below a million after a packet flow started beside it (HPCC's newcomer)
TM_LIVE = 7  # packet flows on its data path's ports (summed) when its share was last set: one ending gives the yield back
TM_LEN = 8

# --- kernel return codes -----------------------------------------------------------------------
RUN_DONE = 0  # no events left, or the stop time was reached
RUN_BUDGET = 1  # event budget of this call used up: call again
RUN_GROW = 2  # packet pool or PFC log nearly full: grow and call again
RUN_MEMO = 3  # the memo log has records: handle them and call again
