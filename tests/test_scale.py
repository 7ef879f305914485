import pytest

from annotated_transformer.scale import at_scale, current_scale, smoke_note


def test_scale_switch(monkeypatch):
    monkeypatch.delenv("AT_SCALE", raising=False)
    assert current_scale() == "laptop" and at_scale(1, 2) == 2
    monkeypatch.setenv("AT_SCALE", "smoke")
    assert at_scale(1, 2) == 1
    # paper-scale work is the train command's, not a chapter setting
    monkeypatch.setenv("AT_SCALE", "gpu")
    with pytest.raises(ValueError, match="smoke, laptop"):
        current_scale()


def test_the_smoke_note_is_printed_at_smoke_scale_only(monkeypatch, capsys):
    monkeypatch.setenv("AT_SCALE", "laptop")
    smoke_note("the copy model")
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("AT_SCALE", "smoke")
    smoke_note("the copy model")
    assert capsys.readouterr().out.startswith(
        "AT_SCALE=smoke: the copy model trained for a few updates only"
    )
