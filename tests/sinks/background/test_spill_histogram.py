from gradewire import Histogram, Table
from gradewire.sinks.background._spill_format import Entry, decode_entry, encode_entry


def test_a_spilled_step_keeps_its_histogram_and_tables():
    histogram = Histogram.of([0.1, 0.2, 0.9, 2.0, float("nan")], edges=[0.0, 0.5, 1.0])
    table = Table(initial_headers=["a"]).add_row([1.5])
    logs = {"r/score/histogram": histogram, "r/score/mean": 0.4, "r/t": table}
    line = encode_entry(Entry(seq=3, step=7, logs=logs, config=None))
    decoded = decode_entry(line)
    assert decoded.step == 7
    assert decoded.logs == logs
    assert b"$histogram" in line
