import pytest

from annotated_transformer.scale import at_scale, current_scale


def test_scale_switch(monkeypatch):
    monkeypatch.delenv("AT_SCALE", raising=False)
    assert current_scale() == "laptop" and at_scale(1, 2) == 2
    monkeypatch.setenv("AT_SCALE", "smoke")
    assert at_scale(1, 2) == 1
    monkeypatch.setenv("AT_SCALE", "gpu")
    assert at_scale(1, 2) == 2 and at_scale(1, 2, 3) == 3
    monkeypatch.setenv("AT_SCALE", "huge")
    with pytest.raises(ValueError, match="smoke, laptop, gpu"):
        current_scale()
