"""Annotation: propose target spans and provenance graphs (two-phase LLM, lineage)."""
