"""Results and plans are byte-identical to the recorded corpus (tests/corpus.py).

Every case of :func:`corpus.cases` must give exactly the digest recorded in
``tests/data/corpus_hashes.json``: the sha256 of the result's bytes and of the canonical plan
description, or the class of the exception it raises. A restructuring of the package must
leave all of them unchanged; an intended change of results or plans is recorded again with
``python tests/corpus.py --record`` and reviewed in the diff of the JSON file.
"""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import HASHES, cases, digest  # noqa: E402

CASES = list(cases())
RECORDED = json.loads(HASHES.read_text())


def test_corpus_size_and_coverage():
    names = [c[0] for c in CASES]
    assert len(names) == len(set(names)), "case names must be unique"
    assert len(names) >= 200
    missing = sorted(set(names) - set(RECORDED))
    assert not missing, f"cases without a recorded digest: {missing[:10]}"
    stale = sorted(set(RECORDED) - set(names))
    assert not stale, f"recorded digests without a case: {stale[:10]}"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_corpus_case_unchanged(case):
    assert digest(case) == RECORDED.get(case[0]), f"{case[0]}: result or plan differs from the recorded corpus"
