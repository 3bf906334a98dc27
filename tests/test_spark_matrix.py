"""The King-format reader (pure numpy): units, imputation of missing pairs, nearest neighbour."""

from __future__ import annotations

import numpy as np
import pytest

from spark.matrix import read_king


def test_king_rtt_microseconds_become_one_way_milliseconds(tmp_path):
    f = tmp_path / "king.txt"
    f.write_text("# three hosts\n0 20000 -1\n20000 0 60000\n-1 -1 0\n")
    one_way, nearest, missing = read_king(f)
    assert missing == 3
    assert one_way[0, 1] == one_way[1, 0] == 10.0
    assert one_way[1, 2] == 30.0
    assert one_way[2, 1] == 30.0  # missing: the reverse direction was measured
    mean = (10 + 10 + 30) / 3
    assert one_way[0, 2] == pytest.approx(mean) and one_way[2, 0] == pytest.approx(mean)  # neither: mean
    assert np.all(np.diag(one_way) == 0)
    assert nearest.tolist() == [10.0, 10.0, pytest.approx(mean)]  # row 2 measured nothing: the mean


def test_king_matrix_must_be_square(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("0 1\n1 0 3\n")
    with pytest.raises(ValueError, match="square"):
        read_king(f)
