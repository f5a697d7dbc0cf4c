"""What the tests share and do not test: factories, fakes and data builders.

Imported as ``tests.support.<module>`` (pytest puts the checkout on ``sys.path``:
``pythonpath`` in pyproject.toml; the benchmark scripts insert it themselves). Nothing here is
part of the package: the wheel holds ``mtcabench/`` only.

- :mod:`.paths`: where the bundled sample and the real TauBench airline file are;
- :mod:`.annotate_data`, :mod:`.annotate_fakes`: tiny conversations, well-formed LLM answers
  and an OpenAI-compatible HTTP double (with faults) for the annotator;
- :mod:`.chain_data`: a benchmark of long chains (the large ``show`` test and benchmark);
- :mod:`.fake_hub`: a Hugging Face Hub double for ``release publish``;
- :mod:`.sample_reviews`: hand-written review decisions on the bundled sample;
- :mod:`.smoke`: trace-only benchmarks built from raw conversations (timing and smoke runs).
"""
