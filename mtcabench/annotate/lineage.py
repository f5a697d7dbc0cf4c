"""Lineage proposals: a deterministic, model-free annotator (being built; see issue 8).

Contract other modules rely on:

    propose_lineage(conversations: Iterable[Conversation], config: LineageConfig | None = None)
        -> Iterator[Candidate]   # status "ok" candidates with annotator.name == "lineage"
"""
