"""Which tokens an earlier component marked, as learned vectors a recognizer reads beside its
transformer's.

A recognizer over a general-domain encoder does not know the domain's vocabulary, but the KB
does: `kb_name_marker` keeps the spans that read as KB names in
`doc.spans[key]`, and this layer gives each token one of five vectors (outside every marked
span; the first, a middle or the last token of one; a one-token span), so the recognizer learns
how far to trust a KB match instead of taking every match as a mention. A transition-based
recognizer sees no token after the one it is at, so the marks say where a span ends, not only
where it is.
"""
from typing import Callable, List, Optional, Tuple

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Embed, Model, with_array
from thinc.types import Floats2d, Ints1d

from ..util import ArboError

OUTSIDE, BEGIN, INSIDE, LAST, UNIT = range(5)
_SAMPLE_PASS = "_sample_pass_pending"


@registry.architectures("spacy_arbo.SpanMarks.v1")
def build_span_marks(spans_key: str, width: int) -> Model[List[Doc], List[Floats2d]]:
    """`width`-wide vectors of each token's place in the spans of `doc.spans[spans_key]`."""
    embed = with_array(Embed(width, 5))
    return Model("span_marks", forward, init=init, layers=[embed], dims={"nO": width},
                 attrs={"spans_key": spans_key})


def mark_ids(doc: Doc, spans_key: str, required: bool = True) -> numpy.ndarray:
    """OUTSIDE, BEGIN, INSIDE, LAST or UNIT for each token of `doc`; of overlapping spans, the
    first (the longest of those starting at one token) is marked."""
    if spans_key not in doc.spans:
        if not required:
            return numpy.full(len(doc), OUTSIDE, dtype="int32")
        raise ArboError(f"The recognizer reads the spans in doc.spans['{spans_key}'], but this doc has none: put the "
                        f"component that marks them (kb_name_marker with spans_key \"{spans_key}\") before it.")
    ids = numpy.full(len(doc), OUTSIDE, dtype="int32")
    end = 0
    for span in sorted(doc.spans[spans_key], key=lambda s: (s.start, -s.end)):
        if span.start < end:
            continue
        if len(span) == 1:
            ids[span.start] = UNIT
        else:
            ids[span.start], ids[span.start + 1:span.end - 1], ids[span.end - 1] = BEGIN, INSIDE, LAST
        end = span.end
    return ids


def init(model: Model, X: Optional[List[Doc]] = None, Y: Optional[List[Floats2d]] = None) -> None:
    model.layers[0].initialize()
    if X is not None:
        # The recognizer's initialization then runs the tok2vec once on this sample, to size the
        # layers after it: docs straight from the corpus, which the marking component has not seen.
        model.attrs[_SAMPLE_PASS] = True


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    required = not model.attrs.pop(_SAMPLE_PASS, False)
    ids: List[Ints1d] = [model.ops.asarray1i(mark_ids(doc, model.attrs["spans_key"], required)) for doc in docs]
    vectors, backprop_embed = model.layers[0](ids, is_train)

    def backprop(d_vectors: List[Floats2d]) -> List[Doc]:
        backprop_embed(d_vectors)
        return []

    return vectors, backprop
