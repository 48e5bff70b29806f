"""The ``tcplab`` commands (floor 7, the top of the Python front): one module per command or
command group, each with ``register(app)`` adding itself to the root app that
:mod:`tcplab.cli` builds.

:mod:`~tcplab.commands.common` is the plumbing they share (one-line errors and exit codes,
the option types, the console). The others: :mod:`~tcplab.commands.run`,
:mod:`~tcplab.commands.compare`, :mod:`~tcplab.commands.validate`,
:mod:`~tcplab.commands.check`, :mod:`~tcplab.commands.scenarios`,
:mod:`~tcplab.commands.collect`, :mod:`~tcplab.commands.diagnose`,
:mod:`~tcplab.commands.reproduce`, :mod:`~tcplab.commands.experiments`,
:mod:`~tcplab.commands.kernel` (the ``kernel`` group), :mod:`~tcplab.commands.sweep`,
:mod:`~tcplab.commands.export` (the ``export`` group), :mod:`~tcplab.commands.ss`,
:mod:`~tcplab.commands.recommend`; :mod:`~tcplab.commands.summary` is what ``run`` and
``kernel run`` print after a run.

May import: every floor below (the commands' packages, runner and compare, views and
exports, results, the engine, the scenario, the leaves). Nothing imports this package but
:mod:`tcplab.cli`. A command module imports only typer and :mod:`~tcplab.commands.common`
at import time (``tcplab --help`` loads them all); what a command needs it imports when it
runs.
"""
