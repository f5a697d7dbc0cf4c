"""Reviewers as Label Studio users: a decision's reviewer is the user who completed it.

Label Studio names a user by e-mail address and `review pull` records that address as the
reviewer. The annotated claims set names its people by pseudonym (``p2``), which is no
address: a pseudonym's account is ``p2@pseudonym.invalid`` (``.invalid`` is reserved, RFC
2606: no mail can reach it, and no real address ends so), and pull records its reviewer as
``p2`` again. A reviewer given as an address keeps it, both ways.
"""

from __future__ import annotations

import secrets

from mtcabench.review._client import ReviewClient

#: The domain of a pseudonym's Label Studio account.
PSEUDONYM_DOMAIN = "pseudonym.invalid"


def account_email(reviewer: str) -> str:
    """The Label Studio e-mail address standing for ``reviewer``."""
    return reviewer if "@" in reviewer else f"{reviewer}@{PSEUDONYM_DOMAIN}"


def reviewer_of(email: str) -> str:
    """The reviewer a Label Studio address stands for (the pseudonym of a pseudonym's)."""
    name, at, domain = email.rpartition("@")
    return name if at and name and domain.lower() == PSEUDONYM_DOMAIN else email


def ensure_users(client: ReviewClient, reviewers: set[str]) -> tuple[dict[str, int], list[str]]:
    """Each reviewer's Label Studio user id, creating the accounts that are missing.

    Returns (reviewer -> user id, the reviewers whose account was created). A created
    account gets a random password that is neither printed nor kept: nobody logs in as a
    checker whose decisions came from a file; an administrator can set one.
    """
    users = client.call("listing users", client.sdk.users.list)
    by_email = {(u.email or "").lower(): u.id for u in users}
    out: dict[str, int] = {}
    created: list[str] = []
    for name in sorted(reviewers):
        email = account_email(name)
        uid = by_email.get(email.lower())
        if uid is None:
            user = client.call(
                f"creating the Label Studio user {email}", client.sdk.users.create,
                username=name.split("@")[0][:150], email=email,
                password=secrets.token_urlsafe(24))
            uid = user.id
            created.append(name)
        out[name] = uid
    return out, created
