"""`load_model` on the tiny models: a model folder is loaded once per process (the same
LoadedModel for every caller and thread, a command run in process included), a model a
caller changed is loaded afresh instead of being handed out, and the tiny models are the
same every build."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
import torch

from mtcabench.evaluate import load_model
from mtcabench.evaluate.attribution import _loading
from mtcabench.evaluate.attribution._passes import exclusive
from tests.support.tiny_models import build_tiny_model


@pytest.fixture
def own_memo(monkeypatch, tiny_model_dir):
    """An empty memo for this test (the session's, holding tiny_loaded, comes back after it),
    and loads counted: ``counted[0]`` models read from disk so far."""
    monkeypatch.setattr(_loading, "_MEMO", {})
    counted = [0]
    real = _loading._load

    def counting(*args, **kwargs):
        counted[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(_loading, "_load", counting)
    return counted


def test_a_model_is_loaded_once_per_process(tiny_loaded, tiny_model_dir, monkeypatch):
    loads = []
    monkeypatch.setattr(_loading, "_load", lambda *a: loads.append(a))
    assert load_model(str(tiny_model_dir)) is tiny_loaded
    assert load_model(str(tiny_model_dir) + "/") is tiny_loaded  # the same folder
    assert load_model(str(tiny_model_dir), dtype="float32", device="cpu") is tiny_loaded
    assert loads == []
    assert tiny_loaded.name == "tiny-llama" and tiny_loaded.model.config.num_hidden_layers == 2
    with pytest.raises(AttributeError):
        tiny_loaded.name = "another"  # a LoadedModel is shared: it cannot be rebound


def test_other_settings_are_other_models(own_memo, tiny_model_dir):
    base = load_model(str(tiny_model_dir))
    eager = load_model(str(tiny_model_dir), attn_implementation="eager")
    half = load_model(str(tiny_model_dir), dtype="bfloat16")
    assert len({id(base.model), id(eager.model), id(half.model)}) == 3 and own_memo[0] == 3
    assert eager.model.config._attn_implementation == "eager"
    assert next(half.model.parameters()).dtype == torch.bfloat16
    assert load_model(str(tiny_model_dir), attn_implementation="eager") is eager
    _loading.clear_model_memo()
    assert load_model(str(tiny_model_dir)) is not base and own_memo[0] == 4


def test_two_threads_asking_at_once_wait_for_one_load(own_memo, tiny_model_dir):
    got, start = [], threading.Barrier(3)

    def ask():
        start.wait()
        got.append(load_model(str(tiny_model_dir)))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(got) == 3 and got[0] is got[1] is got[2] and own_memo[0] == 1


def _hook(lm):
    return lm.model.model.layers[0].self_attn.register_forward_hook(lambda *a: None)


@pytest.mark.parametrize("change", [
    lambda lm: lm.model.train(),
    lambda lm: lm.model.to(torch.bfloat16),
    lambda lm: lm.model.requires_grad_(True),
    lambda lm: lm.model.set_attn_implementation("eager"),
    lambda lm: setattr(lm.tokenizer, "chat_template", "{{ messages }}"),
    lambda lm: _hook(lm),  # registered and never removed
], ids=["training", "dtype", "gradients", "attention", "template", "hook-left"])
def test_a_model_a_caller_changed_is_loaded_afresh(own_memo, tiny_model_dir, change):
    first = load_model(str(tiny_model_dir))
    change(first)
    again = load_model(str(tiny_model_dir))
    assert again is not first and own_memo[0] == 2  # the changed one stays with its holder
    assert not again.model.training and next(again.model.parameters()).dtype == torch.float32
    assert again.tokenizer.chat_template == first.chat_template
    assert load_model(str(tiny_model_dir)) is again


def test_hooks_of_a_pass_in_progress_or_of_transformers_are_not_a_change(own_memo,
                                                                        tiny_model_dir):
    first = load_model(str(tiny_model_dir), attn_implementation="eager")
    with torch.inference_mode():  # transformers hooks the model to capture the attentions
        first.model(torch.tensor([[1, 2, 3]]), output_attentions=True)
    assert load_model(str(tiny_model_dir), attn_implementation="eager") is first
    got = []
    with exclusive(first.model):  # a pass in another thread holds the lock with its hooks set
        handle = _hook(first)
        worker = threading.Thread(target=lambda: got.append(
            load_model(str(tiny_model_dir), attn_implementation="eager")))
        worker.start()
        worker.join(60)
        handle.remove()
    assert got == [first] and own_memo[0] == 1  # not waited for, not loaded again


def test_a_folder_saved_again_is_loaded_again(own_memo, tiny_model_dir, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(tiny_model_dir, folder)
    first = load_model(str(folder))
    (folder / "config.json").write_bytes((folder / "config.json").read_bytes() + b"\n")
    assert load_model(str(folder)) is not first and own_memo[0] == 2


def test_tiny_models_are_the_same_every_build(tiny_loaded, tiny_model_dir, tmp_path):
    again = build_tiny_model("llama", tmp_path / "again")
    weights = [(Path(d) / "model.safetensors").read_bytes() for d in (tiny_model_dir, again)]
    assert weights[0] == weights[1]
    layer = tiny_loaded.model.model.layers[0]
    assert layer.self_attn.q_proj.weight.std() > 0.1  # peaked attention, not uniform
    assert not torch.equal(layer.input_layernorm.weight, layer.post_attention_layernorm.weight)
