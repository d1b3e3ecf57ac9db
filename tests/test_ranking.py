"""render.ranking.stable_order against numpy's stable argsort."""

import numpy as np
import pytest

from render.ranking import stable_order


@pytest.mark.parametrize("ties", [0, 10, 3000])
def test_the_order_is_the_stable_sorts_with_and_without_equal_values(ties):
    rng = np.random.default_rng(ties)
    values = rng.exponential(size=20_000)
    values[rng.integers(0, 20_000, ties)] = values[:ties]
    order = stable_order(values)
    np.testing.assert_array_equal(order, np.argsort(values, kind="stable"))


def test_equal_values_keep_their_indices_order_zeros_of_either_sign_included():
    values = np.array([3.0, 0.0, 1.0, -0.0, 1.0, 0.0, -1.0])
    np.testing.assert_array_equal(stable_order(values), [6, 1, 3, 5, 2, 4, 0])


def test_an_empty_or_single_array():
    assert stable_order(np.zeros(0)).tolist() == []
    assert stable_order(np.array([2.5])).tolist() == [0]
