import numpy as np
import torch
from thinc.api import Adam
from torch import nn

from spacy_arbo.torch_model import get_module, lazy_torch_model


def _step(model, optimizer) -> None:
    for parameter in get_module(model).parameters():
        parameter.grad = torch.ones_like(parameter)
    model.finish_update(optimizer)


def test_use_params_swaps_in_the_optimizer_averages_and_back():
    model = lazy_torch_model("toy", lambda model, X, is_train: (X, None), lambda: nn.Linear(3, 2), nn.Linear)
    model.initialize()
    module = get_module(model)
    optimizer = Adam(0.1, use_averages=True)
    for _ in range(3):
        _step(model, optimizer)
    raw = {name: p.detach().clone() for name, p in module.named_parameters()}
    averages = {name: optimizer.averages[(model.shims[0].id, name)] for name in raw}
    assert not np.allclose(raw["weight"].numpy(), averages["weight"])
    with model.use_params(optimizer.averages):
        for name, parameter in module.named_parameters():
            assert np.allclose(parameter.detach().numpy(), averages[name])
    for name, parameter in module.named_parameters():
        assert torch.equal(parameter.detach(), raw[name])
    # Training goes on from the raw weights, not the averages.
    _step(model, optimizer)
    assert not torch.equal(module.weight.detach(), raw["weight"])


def test_use_params_without_averages_leaves_the_weights():
    model = lazy_torch_model("toy", lambda model, X, is_train: (X, None), lambda: nn.Linear(3, 2), nn.Linear)
    model.initialize()
    before = get_module(model).weight.detach().clone()
    with model.use_params({}):
        assert torch.equal(get_module(model).weight.detach(), before)
