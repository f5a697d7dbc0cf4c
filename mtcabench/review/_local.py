"""Review without setting anything up: push to a given server, or to one started here.

When no Label Studio URL and key are given (flags or environment), an embedded local
server is started from the migrated template (about 10 s), the candidates are pushed, and
the caller gets the address where a reviewer opens them and the login of the local user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mtcabench.io import load_conversations
from mtcabench.review import _ui as ui
from mtcabench.review._client import Connection, ReviewClient
from mtcabench.review._push import PushReport, push_candidates, read_candidates, reviewable
from mtcabench.services.label_studio import LabelStudioServer, start_label_studio


@dataclass
class ReviewSession:
    """A project ready for review. ``close()`` stops the embedded server, if one was started."""

    review_url: str  # where a reviewer opens the tasks (the project's task list)
    push: PushReport
    connection: Connection = field(repr=False)
    server: LabelStudioServer | None = None  # the embedded server, None for a given URL

    @property
    def login(self) -> tuple[str, str] | None:
        """(e-mail, password) of the embedded server's reviewer account, if embedded."""
        return (self.server.username, self.server.password) if self.server else None

    def client(self) -> ReviewClient:
        """A client of the server holding the project (for `pull` before closing)."""
        return ReviewClient(self.connection,
                            liveness=self.server.failure if self.server else None)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> ReviewSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_review(
    candidates_path: str | Path,
    conversations_path: str | Path,
    *,
    url: str | None = None,
    api_key: str | None = None,
    project: str | int = ui.DEFAULT_PROJECT,
    data_dir: str | Path | None = None,
    progress: bool = True,
    embedded: bool = False,
) -> ReviewSession:
    """Push the candidates for review; start an embedded Label Studio if no server is given.

    The server is ``url``/``api_key``, else ``LABEL_STUDIO_URL``/``LABEL_STUDIO_API_KEY``,
    else a local one started now on 127.0.0.1 (its data in ``data_dir``, or a temporary
    folder removed on close); ``embedded=True`` always starts the local one. The caller closes the session (or uses it as a context
    manager) to stop an embedded server.
    """
    # Bad input stops here, before a server is started or a request sent.
    conversations = load_conversations(conversations_path)
    candidates = read_candidates(candidates_path)
    reviewable(candidates, conversations, source=str(candidates_path))
    connection = None if embedded else Connection.resolve(url, api_key)
    server = None
    if connection is None:
        server = start_label_studio(data_dir)
        connection = Connection.resolve(server.url, server.api_key)
        assert connection is not None
    try:
        with ReviewClient(connection, liveness=server.failure if server else None) as client:
            report = push_candidates(client, candidates, conversations, project=project,
                                     progress=progress, source=str(candidates_path))
    except BaseException:
        if server is not None:
            server.stop()
        raise
    return ReviewSession(review_url=report.project_url, push=report, connection=connection,
                         server=server)
