"""An engine setting declared once, in one file: the CLI's flag, a link's entry and the Schedulers tab's picker."""

import json

import pytest

from app.schedulers.view import SchedulersView
from core.cli.commands import main
from core.measure.lineup import parse_entries, parse_entry
from core.sched.policies import Policy, register, unregister
from core.sched.settings import Setting


class Patient(Policy):
    """A toy engine: continuous batching with two settings, declared here and nowhere else."""

    name = "patient"
    label = "Patient"
    engine = "Toy engine"
    colour = "#345678"
    summary = "a toy engine with two settings"
    settings = (
        Setting("patience", 3, "Toy: passes it waits before admitting", low=1, high=99),
        Setting("temper", "calm", "Toy: its mood", choices=("calm", "cross")),
    )


@pytest.fixture
def patient():
    register(Patient())
    yield "patient"
    unregister("patient")


def test_a_setting_is_checked_as_declared(patient):
    assert (Patient().patience, Patient().temper) == (3, "calm")
    assert Patient(patience=7).with_knobs(temper="cross").temper == "cross"
    with pytest.raises(ValueError, match=r"patience must be an integer in 1\.\.99, got 0"):
        Patient(patience=0)
    with pytest.raises(ValueError, match="temper must be calm or cross, got 'glum'"):
        Patient(temper="glum")


def test_the_cli_makes_a_flag_of_it_with_its_help_and_checks_it(patient, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    out = capsys.readouterr().out.replace("\n", " ")
    assert "--patience" in out and "--temper" in out
    assert "Toy: passes it waits before admitting" in " ".join(out.split())
    trace = tmp_path / "t.csv"
    trace.write_text("arrival,output_tokens\n0,2\n0,3\n")
    argv = ["simulate", "--trace", str(trace), "--slots", "1", "--policy", patient, "--json"]
    assert main([*argv, "--patience", "9", "--temper", "cross"]) == 0
    assert json.loads(capsys.readouterr().out)["policy"] == "patient"
    with pytest.raises(SystemExit):
        main([*argv, "--patience", "100"])
    assert "--patience: expected an integer in 1..99, got '100'" in capsys.readouterr().err
    assert main(["simulate", "--trace", str(trace), "--policy", "continuous", "--temper", "calm"]) == 2
    assert "--temper applies to a policy with that setting (patient) only" in capsys.readouterr().err


def test_a_link_entry_parses_it_by_its_declaration(patient):
    entry = parse_entry("patient:patience=5;temper=cross")
    assert (entry.policy().patience, entry.policy().temper) == (5, "cross")
    assert entry.label() == "Patient (patience 5, temper cross)"
    with pytest.raises(ValueError, match="patience='soon' is not a number"):
        parse_entry("patient:patience=soon")


def test_the_schedulers_tab_offers_it_in_its_picker_and_says_it(patient):
    view = SchedulersView(entries=["vllm", "patient:patience=5"])
    view.__panel__()
    options = view.pickers[0].options
    assert "patient" in options.values() and "patient:temper=cross" in options.values()  # a choice: offered at once
    assert "vllm:scheduling_policy=priority" in options.values()
    words = view.settings_help.object
    assert "Patient" in words
    assert "patience: Toy: passes it waits before admitting (an integer in 1..99; default 3)" in words
    assert "temper: Toy: its mood (calm or cross; default calm)" in words
    assert len(parse_entries("patient,patient:temper=cross")) == 2  # two settings of one engine, side by side



def test_compare_takes_entries_with_settings_and_one_engine_twice(capsys):
    """`compare --policies vllm,vllm:scheduling_policy=priority`: two columns, each run with its own settings."""
    argv = ["compare", "--requests", "40", "--high-priority-share", "0.3", "--token-budget", "512", "--json"]
    assert main([*argv, "--policies", "vllm,vllm:scheduling_policy=priority"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["ratios_to_baseline"]) == {"vllm:scheduling_policy=priority"}
    assert main([*argv, "--policies", "continuous,vllm", "--scheduling-policy", "priority"]) == 0
    flagged = json.loads(capsys.readouterr().out)["vllm"]
    assert flagged == doc["vllm:scheduling_policy=priority"]  # the flag and the entry run the same settings
    assert flagged != doc["vllm"]
    with pytest.raises(SystemExit):
        main([*argv, "--policies", "vllm,vllm:scheduling_policy=fcfs"])  # the same settings twice
    assert "each scheduler once" in capsys.readouterr().err
