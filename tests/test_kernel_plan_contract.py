"""Kernel mode's plan knows every field of the engine contract it is handed (issue 22).

A flow's ``tcp`` and ``cc_params`` keys are the engine's (``tcplab._core.defaults()``, which
LINUX_TCP_DEFAULTS and LINUX_CC_DEFAULTS equal: test_defaults.py). kernel/plan.py sorts
them by what a kernel makes of them: a sysctl of the data sender's or receiver's namespace,
a sysctl of the client's and the server's namespaces by role (``tcp_ecn``), a route
attribute or refusal (the other ``tcp`` keys), a tcp_cubic module parameter
(every ``cc_params`` key but BBR's VM patch, which no kernel has). A key the engine gains
must land in one of them, and none may name a key the engine does not have.
"""

from __future__ import annotations

from tcplab.kernel import plan
from tcplab.scenario import LINUX_CC_DEFAULTS, LINUX_TCP_DEFAULTS


def test_the_plan_sorts_every_tcp_key_of_the_contract_once():
    groups = [set(plan.SENDER_SYSCTLS), set(plan.RECEIVER_SYSCTLS), set(plan.ENDPOINT_SYSCTLS), set(plan._TCP_OTHER)]
    assert sum(len(g) for g in groups) == len(set().union(*groups))  # no key in two groups
    assert set().union(*groups) == set(LINUX_TCP_DEFAULTS)


def test_the_cubic_parameters_are_the_contracts_cc_params_but_bbrs_patch():
    assert len(plan.CUBIC_PARAMS) == len(set(plan.CUBIC_PARAMS))
    assert set(plan.CUBIC_PARAMS) == set(LINUX_CC_DEFAULTS) - {"bbr_vm_patch"}
