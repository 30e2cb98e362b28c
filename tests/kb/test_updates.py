import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.kb.updates import align_ids, plan_update, updated_entities
from spacy_arbo.util import ArboError


def store_of(n):
    return EntityStore(Entity(f"E{i}", f"name {i}") for i in range(n))


def apply(kb, add, remove):
    update = plan_update(kb, add, remove)
    return update, EntityStore(updated_entities(kb, update, add))


def test_swap_remove_keeps_rows_dense_and_moves_only_the_last_rows():
    kb = store_of(6)
    add = [Entity("E1", "name 1, revised"), Entity("N1", "new one")]
    update, new = apply(kb, add, ["E0", "E4"])
    assert new.ids == ["E5", "E1", "E2", "E3", "N1"]
    assert new["E1"].name == "name 1, revised"
    assert update.row_map.tolist() == [-1, 1, 2, 3, -1, 0]
    assert update.dropped.tolist() == [0, 1, 4, 5]  # removed, replaced, moved
    assert update.encoded.tolist() == [0, 1, 4]  # moved in, replaced, added
    assert (update.added, update.replaced, update.removed, update.size) == (1, 1, 2, 5)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.data())
def test_every_entity_lands_where_row_map_says(n, data):
    kb = store_of(n)
    remove = data.draw(st.lists(st.sampled_from(kb.ids), unique=True, max_size=n))
    replace = data.draw(st.lists(st.sampled_from(kb.ids), unique=True, max_size=n))
    fresh = data.draw(st.integers(0, 3))
    add = [Entity(i, f"{i} v2") for i in replace] + [Entity(f"N{j}", "new") for j in range(fresh)]
    update, new = apply(kb, add, remove)
    assert len(new) == update.size == n - len(remove) + fresh + len(set(replace) & set(remove))
    changed = set()
    for old_row, new_row in enumerate(update.row_map.tolist()):
        entity_id = kb.ids[old_row]
        if new_row < 0:
            assert entity_id in remove
            continue
        assert new.ids[new_row] == entity_id
        if new_row != old_row or entity_id in replace:
            changed.add(new_row)
    changed |= {row for row in range(len(new)) if new.ids[row] not in kb or new.ids[row] in remove}
    assert set(update.encoded.tolist()) == changed
    assert set(update.dropped.tolist()) == {r for r, m in enumerate(update.row_map.tolist())
                                            if m != r or kb.ids[r] in replace}


def test_bad_updates_name_the_id():
    kb = store_of(3)
    with pytest.raises(ArboError, match="Cannot remove 'X9': the KB has no entity"):
        plan_update(kb, remove=["X9"])
    with pytest.raises(ArboError, match="name id 'N' twice \\(entries 0 and 1\\)"):
        plan_update(kb, add=[Entity("N", "a"), Entity("N", "b")])
    with pytest.raises(ArboError, match="entry 0\\) has an empty id"):
        plan_update(kb, add=[Entity("", "nameless")])
    assert np.array_equal(plan_update(kb).row_map, [0, 1, 2])


def test_ids_are_compared_normalised():
    """A KB built when only MESH and OMIM prefixes were case-blind spells `chem:0001`: the new
    `CHEM:0001` replaces it (once aligned), never ties with it; removal finds any spelling."""
    kb = EntityStore([Entity("chem:0001", "aspirin"), Entity("MESH:D000001", "a"), Entity("CHEM:0002", "b")])
    assert plan_update(kb, remove=["CHEM:0001", "mesh:d000001", "chem:0002"]).removed == 3
    new = [Entity("CHEM:0001", "acetylsalicylic acid")]
    with pytest.raises(ArboError, match=r"^New entity 'CHEM:0001' \(entry 0\) is the KB's 'chem:0001' spelled otherwise"):
        plan_update(kb, add=new)
    aligned = align_ids(kb, new)
    assert aligned == [Entity("chem:0001", "acetylsalicylic acid")] and align_ids(kb, aligned) == aligned
    update, after = apply(kb, aligned, ())
    assert (update.added, update.replaced, len(after)) == (0, 1, 3) and after["chem:0001"].name == "acetylsalicylic acid"
    with pytest.raises(ArboError, match=r"name id 'CHEM:0003' twice \(entries 0 and 1\); ids are compared normalised"):
        plan_update(kb, add=[Entity("chem:0003", "c"), Entity("CHEM:0003", "d")])


def test_describe_says_what_changed_and_what_was_encoded():
    kb = store_of(3)
    assert plan_update(kb, remove=["E2"]).describe(encodes=True) == (
        "0 added, 0 replaced, 1 removed; none encoded; 2 entities in the KB")
    assert plan_update(kb, remove=["E0"]).describe(encodes=True) == (
        "0 added, 0 replaced, 1 removed; 1 entity encoded (1 moved into a removed entity's row); 2 entities in the KB")
    update = plan_update(kb, add=[Entity("E1", "again"), Entity("N", "new")], remove=["E0"])
    assert update.describe(encodes=True) == ("1 added, 1 replaced, 1 removed; 3 entities encoded (1 new, 1 replaced, "
                                             "1 moved into a removed entity's row); 3 entities in the KB")
    assert update.describe(encodes=False) == ("1 added, 1 replaced, 1 removed; none encoded (no dense index: the "
                                              "TF-IDF index is rebuilt); 3 entities in the KB")
