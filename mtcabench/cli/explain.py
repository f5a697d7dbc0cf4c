"""`mtcabench explain FILE`: where the values and claims of an agent's answer came from.

Reads a transcript as agents log it (any format of :mod:`mtcabench.transcripts`: OpenAI chat
or Responses, Anthropic Messages, OpenTelemetry GenAI spans, Inspect AI logs, a TauBench run,
our conversation records), attributes the chosen spans with Tokengeist (and flat, or any method, for
comparison) on a causal LM, prints each provenance graph as a tree and, with ``--out``,
writes ``explain.json`` and one HTML page per span and method; with ``--otlp-endpoint`` /
``--otlp-file`` the graphs as OpenTelemetry spans, with ``--phoenix`` as span annotations in
Arize Phoenix (docs/traces.md). torch is imported only when the command runs.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from mtcabench.cli import _evaluator as ev
from mtcabench.cli import options
from mtcabench.errors import needs_extra
from mtcabench.evaluate import TraceSettings
from mtcabench.progress import err_console
from mtcabench.terminal import shown
from mtcabench.transcripts import format_names, formats_help


def explain(
    file: Path = typer.Argument(..., help=f"Agent log, its format recognised from its shape: "
                                f"{formats_help()}."),
    format: str | None = typer.Option(None, "--format", help=f"Read FILE as this format "
                                      f"({', '.join(format_names())}) [default: from its shape]."),
    conversation: str | None = typer.Option(None, "--conversation", help="Which conversation "
                                            "of a file holding several: its id, the end of its "
                                            "id (task-3/trial-0), or its position from 0."),
    turn: int | None = typer.Option(None, "--turn", help="Assistant turn to explain, from 0 "
                                    "[default: the last one with content]."),
    span: str | None = typer.Option(None, "--span", help="Text of the turn to explain (its "
                                    "first occurrence) [default turn: the last answer]."),
    start: int | None = typer.Option(None, "--start", help="Start offset of the span in the "
                                     "turn's text (with --end)."),
    end: int | None = typer.Option(None, "--end", help="End offset (exclusive)."),
    values: bool = typer.Option(False, "--values", help="Explain every id-, date- and "
                                "amount-like value of the turn (the lineage annotator's values)."),
    method: list[str] = ev.method(),
    scorer: str = ev.scorer(),
    model: str = ev.model(),
    out: Path | None = options.out("Folder to write explain.json and the HTML pages into.",
                                   default=None),
    top_k: int = ev.top_k(),
    threshold: float = ev.threshold(),
    d_max: int = ev.d_max(),
    alpha: float = ev.alpha(),
    match_values: bool = ev.match_values(),
    open_system: float | None = ev.open_system(),
    named_values: bool = ev.named_values(),
    value_origin: bool = ev.value_origin(),
    max_tokens: int | None = ev.max_tokens(
        "a span past it is attributed in a context window of the conversation (earlier "
        "turns shortened)."),
    window_room: float = ev.window_room(),
    otlp_endpoint: str | None = typer.Option(
        None, "--otlp-endpoint", metavar="URL", help="Send the graphs as OpenTelemetry spans "
        "(OTLP HTTP/protobuf; a URL without a path gets /v1/traces): per span and method a "
        "provenance span under the answer's span, linked to its parent turns' spans, with a "
        "gen_ai.evaluation.result event; a log that is no trace gets a trace of its own. "
        "Headers (API keys) from OTEL_EXPORTER_OTLP_HEADERS. See docs/traces.md."),
    otlp_file: Path | None = typer.Option(
        None, "--otlp-file", metavar="PATH", help="Write the same spans as an OTLP JSON "
        "export to PATH."),
    phoenix: str | None = typer.Option(
        None, "--phoenix", metavar="URL", help="Annotate the agent's spans in the Arize "
        "Phoenix at URL (e.g. http://localhost:6006): one 'provenance' annotation per edge on "
        "the child turn's span, updated in place on a rerun. API key from $PHOENIX_API_KEY."),
    seed: int = ev.seed(),
    verify_edges: bool = ev.verify_edges(),
    device: str = ev.device(),
    dtype: str = ev.dtype(),
    scorer_settings: dict | None = None,
) -> None:
    """Explain a span of a transcript: its provenance graph over the turns, as a tree."""
    from mtcabench.explainer import (
        check_output_folder,
        explain_conversation,
        output_paths,
        render_trees,
        resolve_targets,
        write_explanation,
    )
    from mtcabench.io import check_outputs_are_not_inputs
    from mtcabench.transcripts import read_transcript

    settings = TraceSettings(
        search=ev.search_settings(top_k, threshold, d_max, alpha, match_values, open_system,
                                  named_values, value_origin),
        max_tokens=max_tokens, window_room=window_room, seed=seed,
        scorers=scorer_settings or {}, verify_edges=verify_edges)
    conv = read_transcript(file, conversation, format)
    targets = resolve_targets(conv, turn=turn, span=span, start=start, end=end, values=values)
    if out is not None:  # before any model runs: a bad --out was refused only after it
        paths = output_paths(targets, method, out)
        check_outputs_are_not_inputs([file, *settings.input_paths()], paths)
        check_output_folder(out, paths)
    if otlp_file is not None or otlp_endpoint is not None or phoenix is not None:
        check_trace_outputs(file, settings.input_paths(), otlp_endpoint, otlp_file, phoenix,
                            from_trace="otel_spans" in conv.metadata)
    with needs_extra("the evaluator"):
        result = explain_conversation(conv, targets, model=model, scorer=scorer,
                                      methods=method, settings=settings, device=device,
                                      dtype=dtype)
    console = Console(soft_wrap=False)
    for tree in render_trees(result):
        console.print(tree)
    if out is not None:
        paths = write_explanation(result, out)
        err_console.print(f"wrote {shown(paths[0])} and {len(paths) - 1} HTML page(s) to {shown(out)}")
    if otlp_file is not None or otlp_endpoint is not None or phoenix is not None:
        send_traces(result, otlp_endpoint, otlp_file, phoenix)
    err_console.print(f"{shown(conv.id)}: {len(targets)} span(s), {result.tokens} tokens, "
                      f"{result.forward_passes} forward pass(es)"
                      + (f" on {shown(result.model)} ({shown(result.scorer)})" if result.model else ""))


def check_trace_outputs(file: Path, inputs: list[Path], otlp_endpoint: str | None,
                        otlp_file: Path | None, phoenix: str | None, from_trace: bool) -> None:
    """Refuse a bad --otlp-* or --phoenix, or a missing otel extra, before any model runs
    (--phoenix needs the extra only for a log that is no trace: it sends a trace of its own)."""
    from mtcabench.explainer import check_phoenix_url, require_otel, traces_url
    from mtcabench.io import check_output_path, check_outputs_are_not_inputs

    if otlp_endpoint is not None or otlp_file is not None or not from_trace:
        require_otel()

    if otlp_endpoint is not None:
        traces_url(otlp_endpoint)
    if phoenix is not None:
        check_phoenix_url(phoenix)
    if otlp_file is not None:
        check_outputs_are_not_inputs([file, *inputs], [otlp_file])
        check_output_path(otlp_file)


def send_traces(result, otlp_endpoint: str | None, otlp_file: Path | None,
                phoenix: str | None) -> None:
    """The graphs as telemetry (--otlp-endpoint, --otlp-file) and as Phoenix annotations."""
    from mtcabench.explainer import annotate_phoenix, make_spans, send_otlp, write_otlp_file

    from mtcabench.model import ExplanationRecord

    # As explain.json holds it (scores rounded to six decimals): the trace and the file agree.
    record = ExplanationRecord.model_validate(result.to_json())
    if otlp_file is not None or otlp_endpoint is not None:
        spans = make_spans(record, result.conversation)
        if otlp_file is not None:
            write_otlp_file(spans, otlp_file)
            err_console.print(f"wrote {len(spans)} OpenTelemetry span(s) to {shown(otlp_file)}")
        if otlp_endpoint is not None:
            sent = send_otlp(spans, otlp_endpoint)
            err_console.print(f"sent {len(spans)} OpenTelemetry span(s) to {shown(sent)}")
    if phoenix is not None:
        report = annotate_phoenix(record, result.conversation, phoenix,
                                  warn=lambda line: err_console.print(f"warning: {shown(line)}"))
        spans = {a.span for a in report.annotated}
        where = ", ".join(shown(u) for u in report.trace_urls())
        # soft_wrap: a URL broken over two lines cannot be opened
        err_console.print(f"annotated {len(report.annotated)} edge(s) on {len(spans)} span(s) "
                          f"in Phoenix" + (f" (removed {len(report.removed)} of edges the graph "
                                           "no longer has)" if report.removed else "")
                          + (f": {where}" if where else f" at {shown(report.url)}"),
                          soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("explain")(ev.with_scorer_options(explain))
