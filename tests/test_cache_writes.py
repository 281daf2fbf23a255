"""The on-disk caches under FMIGEN_CACHE are written by several processes at
once (the suite's pytest-xdist workers, parallel builds): two writers of one
entry must both finish and leave a whole entry."""
import os

from fmigen.kinematics import groebner


def test_two_writers_of_one_entry_both_finish_with_a_whole_entry(tmp_path, monkeypatch):
    """Writer B writes the same entry while writer A is between writing its
    temporary file and renaming it (as another process can).  Before, both
    wrote the one temporary file ``<entry>.tmp``: B renamed it away and A's
    rename failed (FileNotFoundError)."""
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path)
    key = "an entry both processes derive"
    a_text, b_text = "A" * 100_000, "B" * 100_000
    real_replace = os.replace
    other_writer_ran = []

    def replace_after_the_other_writer(src, dst):
        if not other_writer_ran:
            other_writer_ran.append(True)
            groebner.disk_cache(key, lambda: b_text, subdir="race", force=True)
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_after_the_other_writer)
    text, path, hit = groebner.disk_cache(key, lambda: a_text, subdir="race")
    assert other_writer_ran and not hit and text == a_text
    assert path.read_text() in (a_text, b_text)                 # one writer's whole entry
    assert [p.name for p in path.parent.iterdir()] == [path.name]   # no temporary file left
