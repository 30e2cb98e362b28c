import torch

from spacy_arbo.encoders import threads


def test_threads_leave_the_cores_other_processes_use(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    for busy, expected in [(0.0, 4), (1.2, 3), (2.6, 1), (7.0, 1)]:
        monkeypatch.setattr(threads, "_last", None)
        monkeypatch.setattr(threads, "cores_busy_elsewhere", lambda busy=busy: busy)
        assert threads.free_threads(4) == expected
    monkeypatch.setattr(threads, "_last", None)
    monkeypatch.setattr(threads, "cores_busy_elsewhere", lambda: 0.0)
    assert threads.free_threads(2) == 2  # never more than torch had


def test_threads_are_restored_after_the_block(monkeypatch):
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    monkeypatch.setattr(threads, "free_threads", lambda limit: 1)
    try:
        with threads.threads_beside_other_work() as chosen:
            assert chosen == 1 and torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_sample_measures_this_machine():
    busy = threads.cores_busy_elsewhere(0.05)
    assert 0.0 <= busy <= threads.usable_cores() + 0.5
