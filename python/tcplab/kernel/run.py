"""One kernel-mode run, start to end: :func:`kernel_run` -> :class:`~tcplab.kernel.result.KernelResult`.

The order (each step bounded in time):

1. load and validate the scenario, resolve its engine config (the same ``sc.to_core()`` the
   simulator runs); root required; probe the kernel (:func:`tcplab.kernel.env.probe`) and
   check that the machine has what the run needs, all of it listed at once
   (:func:`tcplab.kernel.needs.check_needs`: tools, qdiscs, the delay line);
2. plan (:func:`tcplab.kernel.plan.make_plan`): what cannot be built is refused here, with
   the scenario's field path, before anything exists; the delay line binary and the tools
   must be present;
3. the quiet check (:func:`tcplab.kernel.env.quiet_check`, before anything of ours runs);
4. :class:`~tcplab.kernel.testbed.Testbed` up (namespaces, links, qdiscs, nft, delay lines),
   ``nstat`` of every node before the traffic, the traffic agents (one per host,
   ``tcplab.kernel.agent``) started with a common ``t0`` a moment ahead (CLOCK_MONOTONIC,
   shared by every namespace), the queue sampler (``tcplab.kernel.sampler``);
5. wait for the duration (a progress bar on a terminal), checking every 0.2 s that the run
   is whole (:func:`tcplab.kernel.watch.during`: its namespaces, agents, delay lines and
   sampler; a cleanup of the prefix or a kill raises :class:`~tcplab.kernel.errors.KernelRunBroken`,
   nothing is written); at ``t0 + duration`` read every
   counter at once (``tc -s``, ``ip -s link``, ``nstat``, ``nft``: :class:`_Snapshot`, so
   the teardown is not counted), stop the agents (they end by themselves at ``t0 +
   duration``; SIGTERM after a grace), the sampler and the delay lines (their stats), then
   collect (``tcplab.kernel.measure.collect``: those counters and the agents' files) while
   the namespaces still exist, and check once more (:func:`tcplab.kernel.watch.after`: no
   agent stopped by a signal, samples up to the end);
6. Testbed down (always: success, failure, Ctrl-C, SIGTERM, timeout), then the result with
   its validity: INVALID when the quiet check failed (unless ``allow_busy``), a delay line
   or a sampler was late, or an agent failed (:func:`tcplab.kernel.measure.validity`).

The watchdog: ``timeout_s`` (default duration + 60 s) after the start, SIGALRM raises
:class:`KernelTimeout` in the main thread wherever it waits; the cleanup then runs as for
any other failure (the alarm is off by then). SIGINT/SIGTERM raise ``KeyboardInterrupt``
(:mod:`tcplab.signals`); a second signal during the cleanup is held until it is done.
Nothing is written unless ``out`` is given, and then atomically (``Result.write``).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.kernel.errors import KernelError, KernelUnsupported
from tcplab.kernel.options import KernelOptions

if TYPE_CHECKING:
    from tcplab.kernel.result import KernelResult
    from tcplab.scenario import Scenario

__all__ = ["kernel_run", "KernelTimeout", "REQUIRED_TOOLS", "START_LEAD_S"]

#: Tools every run needs (iproute2, ethtool); nft only with loss.
REQUIRED_TOOLS = ("ip", "tc", "ss", "nstat", "ethtool")
#: t0 is this far after the agents are asked to start (they import Python and listen first).
START_LEAD_S = 2.0
#: After t0 + duration: how long the agents get to finish by themselves (they exit at +1 s).
AGENT_GRACE_S = 3.0


class KernelTimeout(KernelError):
    """The run exceeded its time bound; everything was stopped and removed."""


@contextlib.contextmanager
def _watchdog(timeout_s: float) -> Iterator[None]:
    """SIGALRM after ``timeout_s`` raises :class:`KernelTimeout` (main thread only)."""
    if threading.current_thread() is not threading.main_thread() or timeout_s <= 0:
        yield
        return

    def fire(signum: int, frame: Any) -> None:  # noqa: ARG001 - signal handler signature
        raise KernelTimeout(f"kernel: the run exceeded its time bound of {timeout_s:g} s; stopped and cleaned up")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM (pending, not lost) while cleaning up."""
    try:
        from tcplab.signals import signals_blocked

        cm = signals_blocked()
    except ImportError:  # pragma: no cover
        cm = contextlib.nullcontext()
    with cm:
        yield


def _sleep_until(
    deadline_ns: int, progress: Any, t0_ns: int, duration_ns: int, check: Callable[[], None] | None = None
) -> None:
    """Wait for the traffic, updating the progress bar; ``check()`` at each wake-up (every
    0.2 s at most) raises when the run is broken under it (:mod:`tcplab.kernel.watch`)."""
    from tcplab.signals import raise_if_terminated

    while True:
        now = time.monotonic_ns()
        if progress is not None:
            progress(max(0, min(now - t0_ns, duration_ns)), duration_ns)
        if now >= deadline_ns:
            return
        if check is not None:
            check()
        raise_if_terminated()
        time.sleep(min(0.2, (deadline_ns - now) / 1e9))


def _check_tools(env: Any, plan: Any) -> None:
    missing = [t for t in REQUIRED_TOOLS if not env.tools.get(t)]
    if any(w.nft for w in plan.wires) and not env.tools.get("nft"):
        missing.append("nft")
    if missing:
        raise KernelError(
            f"kernel: missing tools: {' '.join(missing)} (Debian: apt-get install iproute2 ethtool nftables)"
        )
    if any(w.tuns for w in plan.wires) and not env.delayline:
        from tcplab.kernel.delayline import NOT_BUILT

        raise KernelError(f"kernel: {NOT_BUILT}")


def kernel_run(
    scenario: str | Path | Scenario,
    *,
    overrides: Sequence[str] | None = None,
    seed: int | None = None,
    options: KernelOptions | None = None,
    out: str | Path | None = None,
    force: bool = False,
    progress: Any = False,
    command: Sequence[str] | None = None,
) -> KernelResult:
    """Run ``scenario`` on the running kernel (module doc) and return its result.

    ``progress``: ``True`` for a bar on a terminal, or a callable ``(now_ns, duration_ns)``.
    ``out``: write the run directory there (atomically) before returning.
    """
    from tcplab.kernel.env import probe, quiet_check, require_root
    from tcplab.kernel.plan import make_plan
    from tcplab.loader import load_scenario
    from tcplab.runner import override_texts
    from tcplab.scenario import Scenario
    from tcplab.scenario.checks import engine_message
    from tcplab.scenario.cost import check_kernel_run_time, costed_as_kernel_run

    options = options or KernelOptions()
    started = time.perf_counter()
    if isinstance(scenario, Scenario) and not overrides and seed is None:
        sc = scenario
    else:
        with costed_as_kernel_run():
            sc = load_scenario(scenario, list(overrides or []), seed=seed)
    check_kernel_run_time(sc)  # it runs in real time: its duration within limits.cpu_time
    applied = override_texts(overrides or [], seed)
    config = sc.to_core()
    require_root()
    env = probe(options.prefix)
    from tcplab.kernel.needs import check_needs

    check_needs(env, config)  # everything this machine lacks for the run, one line each
    try:
        plan = make_plan(config, env, options)
    except KernelUnsupported as e:
        raise KernelUnsupported(engine_message(sc, str(e))) from e
    _check_tools(env, plan)
    from tcplab.kernel.testbed import check_free

    check_free(plan)  # refuse before measuring anything (Testbed.up checks again)
    quiet = quiet_check(options.quiet_seconds)
    duration_ns = int(config["duration_ns"])
    timeout_s = options.timeout_s if options.timeout_s is not None else duration_ns / 1e9 + 60.0

    bar = None
    if progress is True:
        from tcplab.progress import SimProgress

        bar = SimProgress(f"{sc.name} (kernel)", unit="s of traffic")
    elif callable(progress):
        bar = progress

    work = Path(tempfile.mkdtemp(prefix=f"{options.prefix}-kernel-"))
    try:
        with _watchdog(timeout_s):
            record = _run_traffic(plan, config, env, options, work, bar)
        result = _make_result(sc, config, plan, env, quiet, options, record, applied, command, started)
    finally:
        if bar is not None and hasattr(bar, "close"):
            bar.close()
        shutil.rmtree(work, ignore_errors=True)
    if out is not None:
        result.write(out, overwrite=force)
    return result


def _run_traffic(plan: Any, config: dict, env: Any, options: KernelOptions, work: Path, bar: Any) -> dict[str, Any]:
    """Testbed up, agents, sampler, wait, collect, Testbed down: what was measured."""
    from tcplab.kernel import measure, watch
    from tcplab.kernel.agent import start_agents, stop_agents
    from tcplab.kernel.sampler import QueueSampler, queue_targets
    from tcplab.kernel.testbed import Testbed

    testbed = Testbed(plan, work, delayline_cpu=options.delayline_cpu)
    procs: list[Any] = []
    sampler = None
    try:
        testbed.up()
        nstat_before = measure.nstat_snapshot(plan)
        t0_ns = time.monotonic_ns() + int((START_LEAD_S + 0.5 * len(plan.hosts)) * 1e9)
        procs = start_agents(plan, config, work, t0_ns, cpu=options.agent_cpu)
        for p in procs:
            testbed.register(p)
        sampler = QueueSampler(
            queue_targets(plan.queue_devices), t0_ns, plan.sample_interval_ns, plan.duration_ns
        ).start()
        end_ns = t0_ns + plan.duration_ns
        agent_nodes = _agent_nodes(plan)
        agents = dict(zip(agent_nodes, procs, strict=False))

        def check() -> None:
            problems = watch.during(testbed, agents, sampler, end_ns)
            if problems:
                at_ns = time.monotonic_ns() - t0_ns
                # a cleanup kills the processes first, then deletes the namespaces: look once
                # more, so the line names the cause and not only its first symptom
                time.sleep(watch.SETTLE_S)
                again = watch.during(testbed, agents, sampler, end_ns)
                problems = again + [p for p in problems if p not in again]
                raise watch.broken(problems, at_ns, plan.duration_ns, plan.prefix)

        _sleep_until(end_ns, bar, t0_ns, plan.duration_ns, check)
        # the marking lines' counters at the same moment as the rest (measure.collect)
        asked = testbed.request_delayline_snapshots()
        final = _end_snapshot(plan, work, measure)
        codes = stop_agents(procs, timeout_s=max(0.0, (end_ns - time.monotonic_ns()) / 1e9) + AGENT_GRACE_S)
        agent_exit = dict(zip(agent_nodes, codes, strict=False))
        queue = queue_lateness = None
        if sampler is not None:
            queue = sampler.stop()
            queue_lateness = sampler.lateness()
        delaylines = testbed.stop_delaylines()
        m = measure.collect(
            plan,
            work,
            release=env.release,
            nstat_before=nstat_before,
            queue=queue,
            queue_lateness=queue_lateness,
            delaylines=delaylines,
            delaylines_at_end=testbed.delayline_snapshots(asked),
            agent_exit=agent_exit,
            runner=final.runner,
        )
        # broken at the very end (after the last check), or cut short by what was recorded
        problems = testbed.lost() + watch.after(m, agent_nodes)
        if problems:
            raise watch.broken(problems, time.monotonic_ns() - t0_ns, plan.duration_ns, plan.prefix)
        return {"measurements": m, "t0_ns": t0_ns, "agent_nodes": agent_nodes, "testbed": testbed}
    finally:
        # The cleanup is not to be cut short: the watchdog is disarmed (its own bound is the
        # commands' timeouts) and SIGINT/SIGTERM are held until it is done.
        if threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, 0)
        with _signals_held():
            if sampler is not None:
                sampler.stop(timeout_s=1.0)
            if procs:
                with contextlib.suppress(Exception):
                    stop_agents([p for p in procs if p.poll() is None], timeout_s=0)
            problems = testbed.down()
            if problems:
                print("warning: kernel cleanup: " + "; ".join(problems), file=sys.stderr)


class _Snapshot:
    """The counters at the end of the traffic (module doc, step 5): every command
    :func:`tcplab.kernel.measure.collect` runs (``tc -s``, ``ip -s link``, ``nstat``, ``nft``),
    run at once, in parallel, at ``t0 + duration``, when the agents read their sockets'
    TCP_INFO. Read after the agents stopped, the counters would also hold the teardown: a
    receiver that closes with data in flight answers with RSTs while the sender still fills
    the bottleneck queue (a 10 s, 100 Mbit/s run: 96 drops in tc, 19 segments the sender
    ever retransmitted). ``runner`` answers collect's commands from the snapshot and runs
    any other command live."""

    def __init__(self, outputs: dict[tuple[str, ...], str | BaseException]):
        self.outputs = outputs

    def runner(self, argv: list[str]) -> str:
        from tcplab.kernel.measure import _run

        out = self.outputs.get(tuple(argv))
        if out is None:
            return _run(argv)
        if isinstance(out, BaseException):
            raise out
        return out


def _end_snapshot(plan: Any, work: Path, measure: Any) -> _Snapshot:
    """Run collect's commands now, in parallel (see :class:`_Snapshot`)."""
    from concurrent.futures import ThreadPoolExecutor

    wanted: list[tuple[str, ...]] = []

    def record(argv: list[str]) -> str:
        wanted.append(tuple(argv))
        return ""

    # a dry pass learns the commands (it reads no file that matters: the agents are running)
    with tempfile.TemporaryDirectory() as empty:
        measure.collect(plan, empty, runner=record)

    def one(argv: tuple[str, ...]) -> str | BaseException:
        try:
            return measure._run(list(argv))
        except (OSError, ValueError) as e:
            return e
        except Exception as e:  # noqa: BLE001 - subprocess errors are reported by collect
            return e

    with ThreadPoolExecutor(max_workers=min(16, max(1, len(wanted)))) as pool:
        outputs = dict(zip(wanted, pool.map(one, wanted), strict=True))
    return _Snapshot(outputs)


def _agent_nodes(plan: Any) -> list[str]:
    """The hosts with flow endpoints, in start_agents' order (servers first, then by name)."""
    listen = {f.server_node for f in plan.flows}
    nodes = {f.client_node for f in plan.flows} | listen
    return sorted(nodes, key=lambda n: (n not in listen, n))


def _make_result(
    sc: Any,
    config: dict,
    plan: Any,
    env: Any,
    quiet: Any,
    options: KernelOptions,
    record: dict[str, Any],
    applied: list[str],
    command: Sequence[str] | None,
    started: float,
) -> KernelResult:
    from tcplab.engine import parse_output
    from tcplab.kernel import measure
    from tcplab.kernel.result import KernelResult
    from tcplab.views import write_run_views

    m = record["measurements"]
    testbed = record["testbed"]
    reasons: list[measure.Reason] = []
    if not quiet.ok and not options.allow_busy:
        reasons.append(measure.Reason(f"the machine was busy before the run: {quiet.reason}", machine=True))
    reasons.extend(measure.validity(m, record["agent_nodes"]))
    kernel = {
        "env": env.to_dict(),
        "quiet": {**quiet.to_dict(), "allow_busy": options.allow_busy},
        "valid": not reasons,
        "invalid_reasons": reasons,
        "options": options.to_dict(),
        "t0_monotonic_ns": record["t0_ns"],
        "departures": plan.departures,
        "plan": {
            "namespaces": plan.namespaces,
            "wires": [
                {"ns": w.ns, "entry": w.entry, "tuns": [t.__dict__ for t in w.tuns], "nft": w.nft} for w in plan.wires
            ],
        },
        "commands": testbed.log,
    }
    return KernelResult(
        sc,
        config,
        parse_output(measure.build_raw(config, m)),
        measurements=m,
        kernel=kernel,
        wall_time_s=time.perf_counter() - started,
        views=write_run_views,
        overrides=applied,
        command=command,
    )
