"""Which domain a TauBench or tau2-bench run is in, read from the run itself: the title of the
policy it was given and the tools it called.

TauBench runs do not record their domain, and tau2's bare lists of simulations do not either;
their file names are a person's choice (``retail-grok-3.json``: the last part is no domain).
What a run does record is its policy, whose title names the domain (``# Airline Agent
Policy``, ``# Retail agent policy``, ``<main_policy>\\n# Telecom Agent Policy``, ``# Medical
Triage Agent Policy``), and its tool calls, which are the domain's own tools. So:

- :func:`policy_domain`: the domain a policy's title names: the words before "agent policy"
  in its first heading, lower-case, joined by ``_`` ("Medical Triage" -> ``medical_triage``);
  None where the policy opens with no such heading.
- :func:`tools_domain`: the one known domain whose own tools (:data:`DOMAIN_TOOLS`) the calls
  are; None where the calls name none, or the tools of two.
- :func:`run_domain`: the title's domain, checked against the tools where it is a known one (a
  run titled airline that calls retail's own tools and none of airline's is refused, one
  line), else the tools' domain.

The tool sets are those the upstream runs call (TauBench's and tau2-bench's airline and
retail, tau2's telecom agent and user tools, tau2's medical triage); tools every domain has
(``think``, ``calculate``, a transfer to a human) tell no domain apart and are in none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mtcabench.errors import InputError

#: The tools of each known domain that the other known domains do not have.
DOMAIN_TOOLS: dict[str, frozenset[str]] = {
    "airline": frozenset({
        "book_reservation", "cancel_reservation", "get_flight_status",
        "get_reservation_details", "list_all_airports", "search_direct_flight",
        "search_onestop_flight", "send_certificate", "update_reservation_baggages",
        "update_reservation_flights", "update_reservation_passengers"}),
    "retail": frozenset({
        "cancel_pending_order", "exchange_delivered_order_items", "find_user_id_by_email",
        "find_user_id_by_name_zip", "get_order_details", "get_product_details",
        "list_all_product_types", "modify_pending_order_address", "modify_pending_order_items",
        "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items"}),
    "telecom": frozenset({
        "can_send_mms", "check_apn_settings", "check_app_permissions", "check_app_status",
        "check_data_restriction_status", "check_installed_apps",
        "check_network_mode_preference", "check_network_status", "check_payment_request",
        "check_sim_status", "check_status_bar", "check_vpn_status", "check_wifi_calling_status",
        "check_wifi_status", "disconnect_vpn", "enable_roaming", "get_bills_for_customer",
        "get_customer_by_phone", "get_data_usage", "get_details_by_id", "grant_app_permission",
        "make_payment", "reboot_device", "refuel_data", "reseat_sim_card", "reset_apn_settings",
        "resume_line", "run_speed_test", "send_payment_request", "set_apn_settings",
        "set_network_mode_preference", "toggle_airplane_mode", "toggle_data",
        "toggle_data_saver_mode", "toggle_roaming", "toggle_wifi_calling"}),
    "medical_triage": frozenset({"find_patient_by_name_dob", "get_patient_details"}),
}

#: A policy's title: its first Markdown heading, "# <Domain> agent policy" (any case, a note
#: after it allowed: "(mtcabench sample)"); a wrapping tag line before it (tau2's telecom policy opens with ``<main_policy>``) is skipped.
_TITLE = re.compile(r"\A(?:\s*<[\w-]+>\s*\n)?\s*#[ \t]+([A-Za-z][A-Za-z0-9 _-]*?)[ \t]+agent[ \t]+"
                    r"policy\b[^\n]*$", re.IGNORECASE | re.MULTILINE)


def policy_domain(policy: object) -> str | None:
    """The domain a policy's title names (see the module docstring), or None."""
    if not isinstance(policy, str):
        return None
    match = _TITLE.match(policy[:400])
    if match is None:
        return None
    return re.sub(r"[\s-]+", "_", match.group(1).strip()).lower()


def tools_domain(tools: Iterable[str]) -> str | None:
    """The one known domain whose own tools ``tools`` are (None: no known tool, or two
    domains' tools)."""
    names = set(tools)
    found = [d for d, own in DOMAIN_TOOLS.items() if names & own]
    return found[0] if len(found) == 1 else None


def run_domain(policy: object, tools: Iterable[str], where: str) -> str | None:
    """The domain of one run by its policy's title and its tools (None: neither tells)."""
    names = set(tools)
    titled = policy_domain(policy)
    if titled is None:
        return tools_domain(names)
    if titled not in DOMAIN_TOOLS:
        return titled  # a domain of its own: its tools may be named as a known domain's
    others = sorted(d for d, own in DOMAIN_TOOLS.items() if d != titled and names & own)
    if others and not names & DOMAIN_TOOLS[titled]:
        other = others[0]
        calls = ", ".join(sorted(names & DOMAIN_TOOLS[other])[:3])
        raise InputError(f"{where}: its policy's title names the domain {titled!r}, but it "
                         f"calls {other}'s own tools ({calls}); pass --domain to name it")
    return titled
