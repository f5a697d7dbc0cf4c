"""The normalisers of rules lineage-v2, each on values as TauBench's gpt-4o airline runs write
them (short quotes from the real file; the conversations are cited by task and turn)."""

from __future__ import annotations

import pytest

from mtcabench.lineage import make_value
from mtcabench.lineage._normalise import (
    MentionIndex,
    amounts,
    clock_times,
    counts,
    dates_in_words,
    folded_pattern,
    iso_dates,
    locate,
    match_key,
    mentions,
)


def keys(found):
    return [(m.kind, m.key) for m in found]


@pytest.mark.parametrize("text, year, expected", [
    ("looking to book a flight from New York to Seattle on May 20th.", 2024,  # task-0 t1
     [("date", "2024-05-20")]),
    ("- Departure: 07:00 PM EST on May 20, 2024", 2024, [("date", "2024-05-20")]),  # task-0 t30
    ("direct flights from JFK to DTW on May 17:", 2024, [("date", "2024-05-17")]),  # task-21 t20
    ("Kevin Smith, with a date of birth of April 12, 2001.", 2024, [("date", "2001-04-12")]),
    ("on the 20th of May", 2024, [("date", "2024-05-20")]),
    ("on May 20th", None, []),  # no year to read it in: no date
    ("May I have your user ID?", 2024, []),  # the verb, not the month
    ("May 32nd", 2024, []),  # no such day
])
def test_dates_in_words(text, year, expected):
    assert keys(dates_in_words(text, year)) == expected


def test_iso_dates_also_as_the_date_of_a_datetime():
    assert keys(iso_dates('"created_at": "2024-05-01T04:50:18"')) == [("date", "2024-05-01")]
    assert keys(iso_dates("2024-13-01")) == []


@pytest.mark.parametrize("text, expected", [
    ("- Departure: 07:00 PM EST", ["19:00:00"]),  # task-0 t14
    ("I don't want to fly before 11 AM EST.", ["11:00:00"]),  # task-0 t11 (user)
    ("the specified time frame of 8 AM to 9 PM.", ["08:00:00", "21:00:00"]),  # task-23
    ('"scheduled_departure_time_est": "15:00:00"', ["15:00:00"]),
    ("Arrives at 01:00+1", ["01:00:00"]),  # task-17 t16: the next day's 01:00
    ('"scheduled_arrival_time_est": "03:00:00+1"', ["03:00:00"]),  # task-0 t13
    ("at 3:00 p.m. or 7pm", ["15:00:00", "19:00:00"]),
    ("departs 9:30", []),  # no AM/PM and a one-digit hour: not exact enough to read
    ("06:00 PM", ["18:00:00"]),  # a 24-hour form followed by PM is the 12-hour time
])
def test_clock_times(text, expected):
    assert [m.key for m in clock_times(text)] == expected


@pytest.mark.parametrize("text, expected", [
    ("Refund: $6,594 has been processed", ["6594"]),  # task-2 t18
    ('"amount": -6594}', ["6594"]),  # the same refund in the update result, without its sign
    ("Total Price: $1,234.50", ["1234.5"]),
    ("calculate: 255.0", ["255"]),
    ("card credit_card_151 and HAT136", []),  # numbers inside ids are not amounts
])
def test_amounts(text, expected):
    assert [m.key for m in amounts(text)] == expected


@pytest.mark.parametrize("text, expected", [
    ("for three passengers.", ["3 passenger"]),  # task-46 t17 (user)
    ("adding 3 checked bags", ["3 bag"]),  # task-4 t16
    ("Two checked bags have been successfully added", ["2 bag"]),  # task-14
    ("had only one passenger: Noah Muller", ["1 passenger"]),  # task-46 t16
    ("you get 2 free checked bags", []),  # an allowance, not a count of bags
    ("$30 per passenger", []),  # a rate
])
def test_counts(text, expected):
    assert [m.key for m in counts(text)] == expected


def test_folded_ids_keep_single_words_exact():
    cert = folded_pattern(make_value("certificate_7504069"))
    assert cert.search("  - Certificate 7504069: $250").group() == "Certificate 7504069"  # task-0
    assert cert.search("- Use certificate 7504069: $250").group() == "certificate 7504069"
    assert folded_pattern(make_value("HAT136")).search("flight hat136").group() == "hat136"
    assert folded_pattern(make_value("SEA")) is None  # "sea" is a word; SEA is Seattle
    assert folded_pattern(make_value("Mia")) is None  # the name, not MIA (Miami)


def test_overlaps_go_to_the_longest_mention():
    found = mentions("- Departure: 07:00 PM EST on May 20, 2024", 2024)
    assert keys(found) == [("time", "19:00:00"), ("date", "2024-05-20")]
    assert keys(mentions("adding 3 checked bags", 2024)) == [("count", "3 bag")]


def test_locate_finds_a_value_in_any_of_its_spellings_and_quotes_the_text():
    text = "looking to book a flight from New York to Seattle on May 20th."
    found = MentionIndex(mentions(text, 2024))
    date = make_value("2024-05-20")
    start, end = locate(text, date, found)
    assert text[start:end] == "May 20th"
    refund = make_value(-6594)
    assert match_key(refund) == ("number", "6594")
    text = "Refund: $6,594 has been processed"
    start, end = locate(text, refund, MentionIndex(mentions(text, 2024)))
    assert text[start:end] == "6,594"
    # a match must stand alone: 151 is not in 1515 or credit_card_151
    text = "paid 1515 with credit_card_151"
    assert locate(text, make_value(151), MentionIndex(mentions(text, 2024))) is None
