"""The console's figures without I/O: series from steps, lag percentiles from histogram
buckets, thresholds across the follower distribution, the SVG charts and the form fields."""

from __future__ import annotations

import math

import pytest

from socialapp.api.console import charts, panels
from socialapp.api.console.forms import change_request, strategy_request
from socialapp.domain import forecast, series
from socialapp.errors import Invalid
from socialapp.metrics import BUILT, lag_field


def test_a_percentile_is_the_bound_of_the_bucket_that_holds_it():
    counts = {0.01: 50, 0.1: 45, 1.0: 4, math.inf: 1}

    assert series.bucket_percentile(counts, 0.5) == 0.01
    assert series.bucket_percentile(counts, 0.9) == 0.1
    assert series.bucket_percentile(counts, 0.99) == 1.0
    assert series.bucket_percentile(counts, 1.0) == math.inf
    assert series.bucket_percentile({}, 0.5) is None


def test_a_lag_falls_in_the_first_bucket_at_or_above_it():
    assert lag_field(0.0) == "lag_le:0.01"
    assert lag_field(0.07) == "lag_le:0.1"
    assert lag_field(1e6) == "lag_le:inf"


def test_steps_become_rates_percentiles_and_gauges_with_gaps():
    window = [
        (100.0, {"deliveries": 50, "lag_le:0.01": 3, "lag_le:0.5": 1, "reads:merged": 10}),
        (105.0, {"queue:fanout": 7, "memory": 2048}),
    ]
    found = series.charts(window, 5, ["fanout"], BUILT)

    assert found["deliveries_per_second"] == [(100.0, 10.0), (105.0, 0.0)]
    assert found["lag_p50"] == [(100.0, 0.01), (105.0, None)]
    assert found["lag_p99"] == [(100.0, 0.5), (105.0, None)]
    assert found["reads:merged"] == [(100.0, 2.0), (105.0, 0.0)]
    assert found["queue:fanout"] == [(100.0, None), (105.0, 7)]
    assert series.latest(found["memory"]) == 2048
    assert series.latest(found["lag_p50"]) == 0.01


def graph(followers: list[int]) -> forecast.Graph:
    authors = [forecast.Author(id=i + 1, followers=n) for i, n in enumerate(followers)]
    return forecast.Graph(authors, 1.0, 10, [], 1.0, 800, 800, 100.0)


def test_thresholds_span_everyone_pulled_to_everyone_pushed():
    followers = [1] * 900 + [10] * 90 + [1000] * 9 + [50_000]
    found = forecast.thresholds_across(graph(followers), 12)

    assert found[0] == 1 and found[-1] == 50_001
    assert found == sorted(set(found))
    assert 11 in found and 1001 in found  # just above the middle and the big accounts
    assert forecast.thresholds_across(graph([]), 12) == [1]


def test_a_chart_draws_each_line_breaks_it_at_gaps_and_marks_thresholds():
    svg = charts.line_chart(
        "memory <by> threshold",
        [("p50", [(1, 5.0), (10, None), (100, 7.0), (1000, 8.0)]), ("p99", [(1, 9.0)])],
        log_x=True,
        markers=[("now", 1000), ("proposed", 10)],
        x_labels=("threshold 1", "threshold 1k"),
    )

    assert svg.startswith('<figure class="chart">') and svg.endswith("</figure>")
    assert svg.count("<svg") == 1 and "<figcaption>memory &lt;by&gt; threshold</figcaption>" in svg
    assert "memory &lt;by&gt; threshold" in svg  # escaped
    assert svg.count("<polyline") == 1  # 100..1000; the lone first point is a dot
    assert svg.count("<circle") == 2
    assert ">now</text>" in svg and ">proposed</text>" in svg
    assert 'text-anchor="end" x="309.0"' in svg  # the rightmost marker's label stays inside
    assert ">threshold 1</text>" in svg and ">threshold 1k</text>" in svg
    assert '<text class="tick peak" x="44" y="16" text-anchor="end">9</text>' in svg
    assert "p50 <b>8</b>" in svg and "p99 <b>9</b>" in svg  # each line's newest value
    assert "style=" not in svg  # the console's CSP forbids inline styles


def test_an_empty_chart_says_nothing_was_measured():
    svg = charts.line_chart("lag", [("p50", [(0, None), (5, None)])], fmt=charts.seconds)
    assert "<polyline" not in svg and "p50 <b>n/a</b>" in svg
    assert '<text class="tick peak" x="44" y="16" text-anchor="end"></text>' in svg


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, "n/a"), (0.004, "4 ms"), (2.5, "2.5 s"), (math.inf, "> 300 s")],
)
def test_lags_read_as_people_say_them(value, shown):
    assert charts.seconds(value) == shown


def test_sizes_and_counts_read_compactly():
    assert charts.size(3 * 2**20) == "3.0 MB"
    assert charts.compact(1_234_567) == "1.2M"
    assert charts.compact(10_001) == "10k"
    assert charts.compact(0.25) == "0.25"


NOW = {"mode": "hybrid", "celebrity_threshold": 10_000}


def test_a_change_keeps_what_it_leaves_out():
    assert change_request({"mode": "write"}, NOW).threshold == 10_000
    assert change_request({"celebrity_threshold": " 42 "}, NOW).mode == "hybrid"
    assert change_request({"mode": "read", "celebrity_threshold": "7"}, NOW).threshold == 7


@pytest.mark.parametrize(
    "form",
    [
        {"mode": "Write"},
        {"celebrity_threshold": "0"},
        {"celebrity_threshold": "2147483649"},
        {"celebrity_threshold": "1.5"},
        {"celebrity_threshold": "١٢"},  # digits of another script: not a threshold
    ],
)
def test_a_bad_change_names_the_field(form):
    with pytest.raises(Invalid) as refused:
        change_request(form, NOW)
    assert ("mode" in form) == refused.value.message.startswith("mode")


def test_a_strategy_is_one_of_three():
    assert strategy_request({"strategy": "pull"}) == "pull"
    with pytest.raises(Invalid):
        strategy_request({"strategy": "PULL"})


@pytest.mark.parametrize(
    ("mode", "threshold", "read_at"),
    [("write", 11, 1001), ("read", 11, 1), ("hybrid", 11, 11), ("adaptive", 5, 11)],
)
def test_a_modes_forecast_is_read_where_it_pushes_and_pulls_alike(mode, threshold, read_at):
    curve = [{"threshold": t} for t in (1, 11, 1001)]
    assert panels.forecast_for(curve, mode, threshold)["threshold"] == read_at
