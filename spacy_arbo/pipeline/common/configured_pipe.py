"""The part of a pipe that is the same for every spacy-arbo component: settings held as a
frozen dataclass, kept in step with the pipeline's config and saved in the component's `cfg`,
and the wrapped scorer."""
import dataclasses
from typing import Any, Callable, Dict, Iterable, List, Optional

import srsly
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model

from ...component_settings import replace_settings, store_in_config
from ...kb.store import BaseEntityStore
from ...util import ArboError


class ConfiguredPipe(TrainablePipe):
    def __init__(self, vocab: Vocab, model: Model, name: str, *, nlp: Optional[Language], scorer: Optional[Callable],
                 settings: Any) -> None:
        self.vocab = vocab
        self.model = model
        self.name = name
        # The pipeline it belongs to: its config keeps the settings that `configure` changes.
        self.nlp = nlp
        self.settings = settings
        self._scorer = scorer
        self.scorer = self._score_with_gold_ents if scorer is not None else None

    @property
    def cfg(self) -> Dict[str, Any]:
        """The settings as a dict (read-only view; change them with `configure`)."""
        return dataclasses.asdict(self.settings)

    def configure(self, **changes: Any) -> None:
        """Change settings, checked, here and in the pipeline's config, so that a saved
        pipeline keeps them (its config.cfg is where they live)."""
        self.settings = replace_settings(self.settings, changes, self.name)
        store_in_config(self.nlp, self, changes)
        self._settings_changed()

    def _settings_changed(self) -> None:
        """What the component must redo when its settings change."""

    # The `cfg` that `to_bytes` and `to_disk` save (`component_settings.write_cfg`). From bytes the
    # component takes it whole: `nlp.from_bytes` keeps the components it has, made from another
    # config. From disk it need not: `spacy.load` made the component from the config.cfg saved
    # with it, which holds the same values, and from the settings given at load time, which stand.

    def cfg_bytes(self) -> bytes:
        return srsly.json_dumps(self.cfg)

    def load_cfg_bytes(self, data: bytes) -> None:
        self.configure(**srsly.json_loads(data))

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        kb_loader: Optional[Callable[[Vocab], BaseEntityStore]] = None,
    ) -> None:
        """`kb_loader` (spaCy's name) gives the component its KB, e.g. `spacy_arbo.KBFromDir.v1`."""
        self.nlp = nlp if nlp is not None else self.nlp
        if kb_loader is not None:
            kb = kb_loader(self.vocab)
            if not len(kb):
                raise ArboError(f"{self.name}: the KB is empty.")
            self.set_kb(kb)
        self._require_kb()
        examples = list(get_examples()) if get_examples is not None else []
        if examples:
            validate_examples(examples, f"{self.name}.initialize")
        self._initialize_model()
        self._initialize(examples)

    def _initialize_model(self) -> None:
        self.model.initialize()

    def set_kb(self, kb: BaseEntityStore) -> None:
        raise NotImplementedError

    def _require_kb(self) -> BaseEntityStore:
        raise NotImplementedError

    def _initialize(self, examples: List[Example]) -> None:
        """What the component prepares once its KB and model are ready."""

    def _score_with_gold_ents(self, examples, **kwargs) -> Dict[str, Any]:
        raise NotImplementedError

    def add_label(self, label: str) -> int:
        raise NotImplementedError
