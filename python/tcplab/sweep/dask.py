"""``tcplab sweep --dask ADDRESS``: the sweep's runs on an existing Dask distributed cluster.

The model: the sweep connects a ``distributed.Client`` to the scheduler at ADDRESS (as Dask
users give it: ``tcp://10.0.0.5:8786``), submits one task per run
(``client.submit(run_point, job, pure=False)``) and takes the outcomes as they complete
(``distributed.as_completed``); the parent writes each run's rows as on the local pool, so
the table is the same (runs are deterministic; the table is sorted by point, seed, flow).

* Before anything is written: the address must parse (``tcp://HOST:PORT``, a port from 1
  to 65535), and whatever listens there must answer Dask's handshake and say it is a
  scheduler (``identity``) within ``timeout_s``: an address nothing listens on, a port of
  another server (HTTP, ssh: they never answer or answer garbage) and a Dask worker are
  refused with one line, in bounded time. ``timeout_s`` defaults to Dask's own connect
  timeout (``distributed.comm.timeouts.connect``, 30 s; set it with
  ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s``). Then the scheduler must have at
  least one worker (waited for up to ``timeout_s``), and every worker must run the same
  tcplab and engine versions as this process (a run key names the engine version: a worker
  with another engine would produce runs under the wrong key); the workers import tcplab
  for it in a thread, not on their event loop (:func:`_versions_off_the_loop`). Otherwise a one-line
  :class:`~tcplab.sweep.errors.SweepError` naming both versions (exit 2).
* A task that raises, or whose worker dies (``KilledWorker`` after Dask's own retries), is
  that run's failure; the sweep goes on.
* Interrupted (Ctrl-C, SIGTERM), the pending tasks are cancelled and the client closed; the
  cluster itself is not touched.
* ``--keep-runs``: the workers write the run directories to ``OUT/runs/KEY/`` (an absolute
  path): OUT must then be on a file system every worker shares.

Start a cluster (``pip install 'tcplab[sweep]'`` on every machine)::

    dask scheduler                      # prints tcp://HOST:8786
    dask worker tcp://HOST:8786 --nthreads 1 --nworkers 2   # on each machine
    tcplab sweep SCENARIO --grid ... -o DIR --dask tcp://HOST:8786

One thread per worker process is the right shape: a simulation holds one core, and the
engine releases the GIL, so several threads per process also work.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence

from tcplab.sweep.errors import SweepError
from tcplab.sweep.executors import PointJob, PointOutcome

__all__ = ["DaskExecutor", "worker_versions"]

DASK_EXPECTED = (
    "the address of a running Dask scheduler, such as tcp://127.0.0.1:8786 (start one with `dask scheduler`)"
)


def worker_versions() -> dict[str, str]:
    """On a worker: its tcplab and engine versions (the engine's, "not built" if absent)."""
    from tcplab.version import __version__

    try:
        from tcplab.sweep.keys import engine_version

        engine = engine_version()
    except ImportError:
        engine = "not built"
    return {"tcplab": __version__, "engine": engine}


def _versions_off_the_loop() -> Callable[[], Awaitable[dict[str, str]]]:
    """What ``client.run`` sends to every worker: a coroutine that calls
    :func:`worker_versions` in a thread of the worker, off its event loop.

    ``client.run`` unpickles its function and calls it on the worker's event loop. Sent as
    is, :func:`worker_versions` would import tcplab there twice over: unpickling it (a
    function is pickled by reference to its module) and calling it (the engine): seconds
    in which the worker answers nobody (distributed warns "Event loop was unresponsive",
    7.7 s was seen). This coroutine is a local function, which pickle cannot name, so
    distributed sends it by value (cloudpickle) and unpickling it imports nothing; it imports
    tcplab in the loop's default executor, a thread, and awaits the answer.
    """

    async def versions() -> dict[str, str]:
        import asyncio
        import importlib

        def call() -> dict[str, str]:
            return importlib.import_module("tcplab.sweep.dask").worker_versions()

        return await asyncio.get_running_loop().run_in_executor(None, call)

    return versions


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _connect_timeout_s() -> float:
    """Dask's connect timeout (``distributed.comm.timeouts.connect``) in seconds."""
    import dask.config
    from dask.utils import parse_timedelta

    try:
        value = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect", "30s"), default="seconds")
    except (TypeError, ValueError):
        value = 30.0
    return float(value) if value and value > 0 else 30.0


def _check_address(address: str) -> None:
    """The address as Dask reads it: ``SCHEME://HOST:PORT`` (scheme tcp when absent)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    if not address.strip():
        raise SweepError("an empty address", file="--dask", expected=DASK_EXPECTED)
    try:
        scheme, location = parse_address(address, strict=False)
        if scheme in ("tcp", "tls", "ws", "wss", "ucx"):
            host, port = parse_host_port(location)
            if not host or not 1 <= int(port) <= 65535:
                raise ValueError("a host and a port from 1 to 65535")
        else:  # inproc:// is within one process: not a cluster's address
            raise ValueError(f"unknown scheme {scheme!r}")
    except (ValueError, TypeError) as e:
        raise SweepError(
            f"{address!r} is not a scheduler address ({_one_line(e)})", file="--dask", expected=DASK_EXPECTED
        ) from None


def _probe_scheduler(address: str, timeout_s: float) -> None:
    """Connect, shake hands and ask ``identity``, all within ``timeout_s``: distributed's
    own connect waits for the peer's handshake without a time limit (a port of an HTTP
    server hangs it) and trusts the frame lengths it reads (garbage can ask for exabytes)."""
    import asyncio
    import socket

    from distributed.comm import connect
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.security import Security

    scheme, location = parse_address(address, strict=False)
    if scheme == "tcp":  # a closed port answers at once; distributed retries until the timeout
        host, port = parse_host_port(location)
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
        except ConnectionRefusedError:
            raise SweepError(
                f"nothing listens at {address} (connection refused)", file="--dask", expected=DASK_EXPECTED
            ) from None
        except socket.gaierror as e:
            raise SweepError(
                f"unknown host {host!r} in {address} ({e.strerror or e})", file="--dask", expected=DASK_EXPECTED
            ) from None
        except TimeoutError:
            raise SweepError(
                f"no answer from {address} within {timeout_s:g} s", file="--dask", expected=DASK_EXPECTED
            ) from None
        except OSError:
            pass  # unreachable network and the like: the handshake below says it in Dask's words

    async def identity() -> object:
        comm = await connect(address, timeout=timeout_s, **Security().get_connection_args("client"))
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        reply = asyncio.run(asyncio.wait_for(identity(), timeout_s))
    except TimeoutError:
        raise SweepError(
            f"no Dask scheduler answered at {address} within {timeout_s:g} s",
            file="--dask",
            expected=DASK_EXPECTED,
        ) from None
    except MemoryError:  # frame lengths read from another protocol's bytes
        raise SweepError(
            f"{address} answers with something that is not Dask's protocol",
            file="--dask",
            expected=DASK_EXPECTED,
        ) from None
    except Exception as e:  # noqa: BLE001 - refused, reset, garbage: not a scheduler
        raise SweepError(
            f"cannot connect to the Dask scheduler at {address} ({_one_line(e) or type(e).__name__})",
            file="--dask",
            expected=DASK_EXPECTED,
        ) from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        raise SweepError(
            f"{address} answers but is not a Dask scheduler ({kind or 'not a Dask server'})",
            file="--dask",
            expected=DASK_EXPECTED,
        )


def _abandon(client: object) -> None:
    """Mark a client whose constructor failed as closed and stop its event loop thread."""
    import contextlib

    client.status = "closed"  # type: ignore[attr-defined]  # makes close()/__del__ no-ops
    with contextlib.suppress(Exception):
        client._loop_runner.stop()  # type: ignore[attr-defined]


class DaskExecutor:
    """Runs a sweep's jobs on the Dask cluster at ``address`` (module doc)."""

    def __init__(self, address: str, *, timeout_s: float | None = None):
        try:
            import distributed
        except ImportError:
            raise SweepError(
                "dask.distributed is not installed",
                file="--dask",
                expected="pip install 'tcplab[sweep]' (dask and distributed), or the local pool (--jobs)",
            ) from None
        if timeout_s is None:
            timeout_s = _connect_timeout_s()
        self.address = address
        _check_address(address)
        _probe_scheduler(address, timeout_s)
        made: list[distributed.Client] = []

        class _Client(distributed.Client):
            """Keeps hold of itself, so a constructor that fails can be shut down here
            (else its __del__ waits 2 x timeout on a loop that is gone, then prints a
            traceback at exit)."""

            def __init__(self, *args: object, **kwargs: object) -> None:
                made.append(self)
                super().__init__(*args, **kwargs)

        try:
            self.client = _Client(address, timeout=f"{timeout_s}s", set_as_default=False)
        except Exception as e:  # noqa: BLE001 - any failure to connect is this one-line error
            for client in made:
                _abandon(client)
            raise SweepError(
                f"cannot connect to the Dask scheduler at {address} ({_one_line(e) or type(e).__name__})",
                file="--dask",
                expected=DASK_EXPECTED,
            ) from None
        try:
            self._check_workers(timeout_s)
        except BaseException:
            self.client.close()
            raise

    def _check_workers(self, timeout_s: float) -> None:
        from tcplab.sweep.keys import engine_version
        from tcplab.version import __version__

        try:
            self.client.wait_for_workers(1, timeout=timeout_s)
        except (OSError, TimeoutError) as e:
            raise SweepError(
                f"the Dask scheduler at {self.address} has no workers ({_one_line(e) or 'timed out'})",
                file="--dask",
                expected="workers started with `dask worker ADDRESS`",
            ) from None
        here = {"tcplab": __version__, "engine": engine_version()}
        versions = self.client.run(_versions_off_the_loop())
        for worker, theirs in sorted(versions.items()):
            for what in ("tcplab", "engine"):
                if theirs.get(what) != here[what]:
                    raise SweepError(
                        f"worker {worker} runs {what} {theirs.get(what)}, this tcplab {what} {here[what]}",
                        file="--dask",
                        expected="the same tcplab and engine on every worker (pip install the same tcplab there)",
                    )
        self.workers = len(versions)

    def map_unordered(
        self, jobs: Sequence[PointJob], fn: Callable[[PointJob], PointOutcome]
    ) -> Iterator[tuple[int, PointOutcome]]:
        from distributed import as_completed

        tag = uuid.uuid4().hex[:8]
        futures = [
            self.client.submit(fn, job, pure=False, key=f"tcplab-sweep-{job.key}-{tag}-{i}")
            for i, job in enumerate(jobs)
        ]
        index = {f.key: i for i, f in enumerate(futures)}
        pending = set(index)
        try:
            for future in as_completed(futures, loop=self.client.loop):
                i = index[future.key]
                pending.discard(future.key)
                try:
                    outcome = future.result()
                except Exception as e:  # noqa: BLE001 - a task error or a dead worker is this run's failure
                    outcome = PointOutcome(jobs[i].key, error=_one_line(f"dask: {type(e).__name__}: {e}"))
                yield i, outcome
        finally:
            left = [f for f in futures if f.key in pending]
            if left:
                self.client.cancel(left)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a client whose scheduler went away
            self.client.close(timeout=5)

    def describe(self) -> str:
        return f"the Dask cluster at {self.address} ({self.workers} worker{'s' if self.workers != 1 else ''})"
