"""Local services the pipeline starts when no URL or key is given: an OpenAI-compatible LLM
server (llama.cpp with SmolLM2, or another packaged model: :mod:`.models`) and a Label Studio
server. Used by the demo and the tests."""
