"""A logistic model over link features (Platt scaling with more than one score), fitted with
scikit-learn and kept as plain numbers, so a saved pipeline needs no pickle and applies it with
numpy alone."""
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Sequence

import numpy as np
from sklearn.linear_model import LogisticRegression

from ..util import ArboError
from .features import FEATURES, feature_matrix


@dataclass(frozen=True)
class Calibration:
    """P(link right | features) = sigmoid(w . standardized features + b). `source` says what
    it was fitted on ("label-free": the KB's own names; "dev": labelled mentions)."""

    mean: List[float]
    scale: List[float]
    weights: List[float]
    bias: float
    source: str
    n_fitted: int
    features: List[str]

    def __call__(self, rows: Sequence[Sequence[float]]) -> np.ndarray:
        if not len(rows):
            return np.zeros(0)
        x = (feature_matrix(rows) - np.asarray(self.mean)) / np.asarray(self.scale)
        return 1.0 / (1.0 + np.exp(-(x @ np.asarray(self.weights) + self.bias)))

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "Calibration":
        """A saved calibration; one of other features, or not one at all, is an error naming `where`."""
        try:
            calibration = cls(**data)
        except TypeError:
            raise ArboError(f"{where}: not a saved confidence calibration.") from None
        if list(calibration.features) != list(FEATURES) or not (
                len(calibration.mean) == len(calibration.scale) == len(calibration.weights) == len(FEATURES)):
            raise ArboError(f"{where}: the calibration was fitted on features {calibration.features}, "
                            f"this version computes {list(FEATURES)}; calibrate the pipeline again.")
        return calibration


def fit_calibration(rows: Sequence[Sequence[float]], right: Sequence[bool], source: str,
                    ignore: Sequence[str] = ()) -> Calibration:
    """Fit on link features and whether each link was right, with Platt's targets: a right link
    counts as (n_right + 1) / (n_right + 2) right, a wrong one as 1 / (n_wrong + 2), so a few
    links, or links all right, give a confidence short of certainty. The features in `ignore`
    get no weight (what the links fitted on show of them does not hold where it is applied)."""
    y = np.asarray(right, dtype=bool)
    if len(rows) != len(y):
        raise ValueError("one outcome per row of features")
    if not len(y):
        raise ArboError("Cannot calibrate confidence on no links.")
    n_right, n_wrong = int(y.sum()), int((~y).sum())
    target = np.where(y, (n_right + 1) / (n_right + 2), 1 / (n_wrong + 2))
    x = feature_matrix(rows)
    unused = np.isin(FEATURES, list(ignore))
    x[:, unused] = 0.0
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    # Each link twice, as right and as wrong, weighted by its target.
    model = LogisticRegression(C=1.0, max_iter=2000).fit(
        np.vstack([z, z]), np.r_[np.ones(len(y)), np.zeros(len(y))], sample_weight=np.r_[target, 1 - target])
    return Calibration(mean.tolist(), scale.tolist(), model.coef_[0].tolist(), float(model.intercept_[0]),
                       source, int(len(y)), list(FEATURES))
