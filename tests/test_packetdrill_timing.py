"""packetdrill's timing rules (python/tcplab/packetdrill/timing.py), from run.c's
adjust_relative_event_times() and verify_time(); the messages are packetdrill's."""

from tcplab.packetdrill.script import EventTime
from tcplab.packetdrill.timing import ResolvedTime, resolve, tolerance_us, verify_time


def absolute(us: int) -> ResolvedTime:
    return ResolvedTime("absolute", us, None, 0, None)


def test_consecutive_inbound_packets_keep_their_script_spacing():
    # `+.1 <` after `0.1 <`: anchored on the previous packet's script time, not on now.
    prev = absolute(100_000)
    t = resolve(
        EventTime("relative", 100_000), inbound_packet=True, previous=prev, previous_inbound_packet=True, now_us=123_456
    )
    assert (t.time_us, t.offset_us) == (200_000, 100_000)


def test_other_relative_events_count_from_when_the_previous_one_happened():
    # `+0 >` after an inbound packet: from now (the packet's processing is done).
    prev = absolute(100_000)
    t = resolve(
        EventTime("relative", 0), inbound_packet=False, previous=prev, previous_inbound_packet=True, now_us=100_250
    )
    assert t.time_us == 100_250
    # An inbound packet after an outbound one: from when the outbound one was seen.
    t = resolve(
        EventTime("relative", 5_000), inbound_packet=True, previous=prev, previous_inbound_packet=False, now_us=130_000
    )
    assert t.time_us == 135_000


def test_relative_ranges_and_blocking_ends_move_with_the_offset():
    r = resolve(
        EventTime("range", 100_000, 105_000, True),
        inbound_packet=False,
        previous=None,
        previous_inbound_packet=False,
        now_us=1_000,
    )
    assert (r.time_us, r.end_us) == (101_000, 106_000)
    b = resolve(
        EventTime("relative", 0, None, False, 200_000),
        inbound_packet=False,
        previous=None,
        previous_inbound_packet=False,
        now_us=50_000,
    )
    assert (b.time_us, b.blocking_end_us) == (50_000, 250_000)
    a = resolve(
        EventTime("absolute", 300_000), inbound_packet=True, previous=None, previous_inbound_packet=False, now_us=7
    )
    assert (a.time_us, a.offset_us) == (300_000, 0)


def test_tolerance_is_4ms_or_an_eighth_of_the_gap():
    assert tolerance_us(100_000, 0) == 12_500  # 12.5 % of 100 ms
    assert tolerance_us(10_000, 0) == 4_000  # 4 ms floor
    assert tolerance_us(10_000, None) == 4_000  # the first event: no gap
    assert tolerance_us(1_000_000, 0, 1_000, 0.0) == 1_000  # --tolerance_percent=0


def test_verify_time_passes_inside_and_reads_like_packetdrill_outside():
    # ioctl-siocinq-fin.pkt's miss on this kernel (tests/test_packetdrill_kernel.py's corpus run):
    when = absolute(300_906)
    err = verify_time(when, 343_793, 300_000, "outbound packet")
    assert err == (
        "timing error: expected outbound packet at 0.300906 sec but happened at 0.343793 sec; tolerance 0.004000 sec"
    )
    assert verify_time(when, 300_906 + 4_000, 300_000, "outbound packet") is None
    assert verify_time(when, 300_906 - 4_001, 300_000, "outbound packet") is not None
    assert verify_time(ResolvedTime("any", 0, None, 0, None), 10**9, None, "outbound packet") is None
    rng = ResolvedTime("range", 101_000, 106_000, 1_000, None)
    assert verify_time(rng, 109_999, 1_000, "outbound packet") is None  # 12.5 % of 100 ms
    assert verify_time(rng, 118_600, 1_000, "outbound packet") == (
        "timing error: expected outbound packet in relative time range +0.100000~+0.105000 sec "
        "but happened at +0.117600 sec"
    )
