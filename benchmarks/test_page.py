#!/usr/bin/env python3
"""Tests of the results page generator (benchmarks/hearthbench/page.py, svgplot.py). Standard
library only, under a second:

    python3 benchmarks/test_page.py
"""
import contextlib
import io
import json
import shutil
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hearthbench import page  # noqa: E402
from hearthbench.common import engine_tags, extra_levels  # noqa: E402
from hearthbench.report import summarize  # noqa: E402


class Sandbox:
    """page's inputs copied to a temporary tree and its outputs pointed there."""

    NAMES = ("REPO", "RESULTS", "HISTORY", "DOCS", "PAGE", "HEADLINE")

    def __enter__(self):
        self.saved = {n: getattr(page, n) for n in self.NAMES}
        self.tmp = Path(tempfile.mkdtemp())
        bench = self.tmp / "benchmarks"
        shutil.copytree(page.RESULTS, bench / "results")
        shutil.copytree(page.HISTORY, bench / "history")
        (self.tmp / "docs").mkdir()
        page.REPO, page.RESULTS, page.HISTORY = self.tmp, bench / "results", bench / "history"
        page.DOCS, page.PAGE = self.tmp / "docs", bench / "RESULTS.md"
        page.HEADLINE = page.DOCS / "speed-vs-llama-cpp.svg"
        return self

    def __exit__(self, *exc):
        for n, v in self.saved.items():
            setattr(page, n, v)
        shutil.rmtree(self.tmp)


def quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


class PageTests(unittest.TestCase):
    def test_the_same_json_gives_the_same_bytes_and_well_formed_svg(self):
        first, second = page.render(), page.render()
        self.assertEqual(first, second)
        svgs = [p for p in first if p.suffix == ".svg"]
        self.assertGreaterEqual(len(svgs), 6)
        for p in svgs:
            ET.fromstring(first[p])   # raises on malformed XML
            self.assertNotIn("nan", first[p].lower())

    def test_the_page_opens_with_the_plots(self):
        text = page.render()[page.PAGE]
        first_section = text.split("\n## ", 1)[1]
        self.assertIn("![", first_section.split("\n## ", 1)[0])
        self.assertIn("../docs/speed-vs-llama-cpp.svg", text)

    def test_check_fails_on_a_stale_file_and_passes_after_a_rewrite(self):
        with Sandbox():
            self.assertEqual(quiet(page.main, []), 0)
            self.assertEqual(quiet(page.main, ["--check"]), 0)
            page.PAGE.write_text(page.PAGE.read_text() + "edited by hand\n")
            self.assertEqual(quiet(page.main, ["--check"]), 1)
            self.assertEqual(quiet(page.main, []), 0)
            self.assertEqual(quiet(page.main, ["--check"]), 0)

    def test_a_missing_measurement_is_listed_not_plotted(self):
        with Sandbox():
            (page.RESULTS / "serving.json").unlink()
            files = page.render()
            self.assertNotIn(page.DOCS / "bench-serving.svg", files)
            not_plotted = files[page.PAGE].split("## Not plotted", 1)[1].split("\n## ", 1)[0]
            self.assertIn("serving throughput and TTFT against clients: no benchmarks/results/serving.json", not_plotted)

    def test_a_harness_run_gives_the_rows_and_ratios_it_measured(self):
        run = {"schema": 2, "date_utc": "2026-01-01 00:00 UTC", "git": {"commit": "0123456789abcdef"},
               "machine": {"cpu": "Test CPU"}, "settings": {"threads": 2}, "models": [{
                   "name": "m", "summary": [
                       {"engine": "llama.cpp", "file": "m.gguf", "ok_runs": 1,
                        "pp": {"tokens_per_second": 10.0}, "tg": {"tokens_per_second": 2.0}},
                       {"engine": "hearth", "variant": "outliers", "file": "m.gguf", "ok_runs": 1,
                        "pp": {"tokens_per_second": 25.0}, "tg": {"tokens_per_second": 3.0},
                        "pp_ratio": 2.5, "tg_ratio": 1.5},
                       {"engine": "hearth", "variant": "16", "file": "m.gguf", "ok_runs": 0}]}]}
        facts, rows = page.gguf_rows(run)
        self.assertEqual(facts["commit"], "0123456789ab")
        self.assertEqual([(r["engine"], r["pp"], r["tg_ratio"]) for r in rows],
                         [("llama.cpp", 10.0, None), ("hearth (aoutliers)", 25.0, 1.5)])
        md, svgs = page.section_ggufs(run)
        self.assertIn("| m | hearth (aoutliers) | `m.gguf` | 25.00 | 3.00 | 2.50× | 1.50× |", md)
        self.assertIn("2.50×", svgs[page.HEADLINE])

    def test_two_hearth_kernel_levels_give_two_rows_with_their_ratios(self):
        # A full run on an AMX host: the default Hearth engine (amx) and the one --also-level adds
        # (HEARTH_CPU=avx512-vnni), each with the level Hearth reported.
        run = {"schema": 2, "date_utc": "2026-01-01 00:00 UTC", "git": {"commit": "0123456789abcdef"},
               "machine": {"cpu": "Test CPU"}, "settings": {"threads": 2}, "models": [{
                   "name": "m", "summary": [
                       {"engine": "llama.cpp", "file": "m.gguf", "ok_runs": 1,
                        "pp": {"tokens_per_second": 10.0}, "tg": {"tokens_per_second": 2.0}},
                       {"engine": "hearth", "variant": "outliers", "kernel_level": "amx", "file": "m.gguf",
                        "ok_runs": 1, "pp": {"tokens_per_second": 40.0}, "tg": {"tokens_per_second": 3.0},
                        "pp_ratio": 4.0, "tg_ratio": 1.5},
                       {"engine": "hearth", "variant": "outliers", "kernel_level": "avx512-vnni",
                        "hearth_cpu": "avx512-vnni", "file": "m.gguf", "ok_runs": 1,
                        "pp": {"tokens_per_second": 20.0}, "tg": {"tokens_per_second": 2.8},
                        "pp_ratio": 2.0, "tg_ratio": 1.4}]}]}
        md, svgs = page.section_ggufs(run)
        self.assertIn("| m | hearth (amx, aoutliers) | `m.gguf` | 40.00 | 3.00 | 4.00× | 1.50× |", md)
        self.assertIn("| m | hearth (avx512-vnni, aoutliers) | `m.gguf` | 20.00 | 2.80 | 2.00× | 1.40× |", md)
        chart = svgs[page.HEADLINE]
        self.assertIn("m (amx)", chart)
        self.assertIn("m (avx512-vnni)", chart)
        self.assertIn("4.00×", chart)
        self.assertIn("2.00×", chart)

    def test_results_without_kernel_levels_still_render(self):
        # Tables copied from a dated run (kind "ggufs", as committed today) and a harness run from
        # before levels were recorded.
        row = lambda engine, pp, ratio: {"engine": engine, "file": "m.gguf", "pp512_tps": pp, "tg128_tps": 2.0,
                                         "pp_ratio": ratio, "tg_ratio": 1.0}
        copied = {"kind": "ggufs", "source": "history/x.md: table", "date": "2026-01-01", "commit": "0123",
                  "cpu": "Test CPU", "threads": 2,
                  "models": [{"name": "m", "rows": [row("llama.cpp", 10.0, 1.0), row("hearth (aoutliers)", 25.0, 2.5)]}]}
        md, svgs = page.section_ggufs(copied)
        self.assertIn("| m | hearth (aoutliers) | `m.gguf` | 25.00 | 2.00 | 2.50× | 1.00× |", md)
        ET.fromstring(svgs[page.HEADLINE])
        old = {"schema": 2, "settings": {"threads": 2}, "models": [{"name": "m", "summary": [
            {"engine": "llama.cpp", "file": "m.gguf", "ok_runs": 1, "pp": {"tokens_per_second": 10.0},
             "tg": {"tokens_per_second": 2.0}},
            {"engine": "hearth", "variant": "16", "file": "m.gguf", "ok_runs": 1, "kernel": "avx512-vnni",
             "pp": {"tokens_per_second": 15.0}, "tg": {"tokens_per_second": 3.0}, "pp_ratio": 1.5, "tg_ratio": 1.5}]}]}
        md, svgs = page.section_ggufs(old)
        self.assertIn("| m | hearth (a16) | `m.gguf` | 15.00 | 3.00 | 1.50× | 1.50× |", md)
        ET.fromstring(svgs[page.HEADLINE])

    def test_the_harness_keeps_each_forced_level_in_its_own_row(self):
        # summarize() (report.py) over runs as bench_hearth records them: the level comes from Hearth's
        # report, the row key from the HEARTH_CPU the harness set.
        def run(engine, pp, level=None, forced=None):
            result = {"pp": {"tokens_per_second": pp, "samples": [pp]}, "tg": {"tokens_per_second": 1.0, "samples": [1.0]},
                      "load_seconds": 0.1}
            if engine == "hearth":
                result["kernel_level"] = level
            return {"engine": engine, "file": "no/such.gguf", "ok": True, "maxrss_bytes": 1, "result": result,
                    **({"variant": "outliers", "hearth_cpu": forced} if engine == "hearth" else {})}
        rows = summarize({"name": "m"}, [run("llama.cpp", 10.0), run("hearth", 40.0, "amx"),
                                         run("hearth", 20.0, "avx512-vnni", "avx512-vnni")], {"gguf": {}, "params": 1})
        self.assertEqual([(r["engine"], r.get("kernel_level"), r.get("hearth_cpu"), r.get("pp_ratio")) for r in rows],
                         [("llama.cpp", None, None, None), ("hearth", "amx", None, 4.0),
                          ("hearth", "avx512-vnni", "avx512-vnni", 2.0)])
        self.assertEqual([engine_tags(r) for r in rows], ["", " (amx, aoutliers)", " (avx512-vnni, aoutliers)"])
        # A level the CPU cannot run: Hearth falls back to its best, and the label says so.
        self.assertEqual(engine_tags({"variant": "16", "kernel_level": "avx512-vnni", "hearth_cpu": "amx"}),
                         " (HEARTH_CPU=amx ran avx512-vnni, a16)")

    def test_the_extra_hearth_level_runs_only_on_an_amx_host_unless_asked(self):
        self.assertEqual(extra_levels("auto", "amx")[0], ["avx512-vnni"])
        self.assertEqual(extra_levels("auto", "avx512-vnni")[0], [])
        self.assertEqual(extra_levels("auto", None)[0], [])
        self.assertEqual(extra_levels("none", "amx")[0], [])
        self.assertEqual(extra_levels("avx2,avx512-vnni,avx2", "avx512-vnni")[0], ["avx2"])
        with self.assertRaises(ValueError):
            extra_levels("avx2,cascadelake", "amx")

    def test_a_speculative_run_is_plotted_prompt_by_prompt(self):
        # speculative.py --json's shape; decode rate = (tokens - 1) / decode_seconds, as it computes it.
        reply = lambda prompt, tokens, seconds: {"prompt": prompt, "kind": "edit", "round": 0,
                                                 "tokens": tokens, "decode_seconds": seconds, "text": ""}
        run = {"summary": {"hearth lookup": {"tokens_per_second": 15.0, "median_speedup_vs_plain": 1.5,
                                             "min_speedup_vs_plain": 1.0}},
               "runs": {"hearth off": [reply(0, 11, 1.0), reply(1, 11, 1.0)],
                        "hearth lookup": [reply(0, 21, 1.0), reply(1, 11, 1.0)],
                        "llama none": [reply(0, 11, 2.0), reply(1, 11, 2.0)],
                        "llama ngram-simple": [reply(0, 11, 2.0), reply(1, 11, 0.5)],
                        "llama ngram-mod": [reply(0, 11, 1.0), reply(1, 11, 4.0)]}}
        rows = page.speculative_per_prompt(run)
        self.assertEqual([(r["prompt"], r["vs_off"], r["vs_llama_best"]) for r in rows],
                         [(0, 2.0, 2.0), (1, 1.0, 0.5)])
        with Sandbox():
            (page.RESULTS / "speculative-run.json").write_text(json.dumps(run))
            files = page.render()
            self.assertIn("| 2 | edit | 1.00× | 0.50× |", files[page.PAGE])
            self.assertNotIn("speculative gain per single prompt", files[page.PAGE])
            ET.fromstring(files[page.DOCS / "bench-speculative.svg"])

    def test_harness_files_replace_copied_tables(self):
        line = lambda label, c, rnd, tps: {"label": label, "clients": c, "round": rnd, "threads": 2, "tokens_per_s": tps,
                                           "ttft_p50_ms": 50.0, "ttft_p99_ms": 90.0, "itl_p99_ms": 20.0}
        serve = [line("hearth", 4, 0, 100.0), line("hearth", 4, 1, 120.0), line("hearth", 4, 2, 200.0),
                 line("llama-fa-on", 4, 0, 80.0)]
        batched = {"model": "models/gemma-3-270m-q4_k_m.gguf", "threads": 2, "prompt": 16, "gen": 8, "levels": [
            {"sequences": 1, "hearth": {"pp": [10.0, 20.0], "tg": [5.0, 7.0]}, "llama.cpp": {"pp": [9.0], "tg": [4.0]}}]}
        with Sandbox():
            (page.RESULTS / "serving-run.jsonl").write_text("\n".join(json.dumps(x) for x in serve) + "\n")
            (page.RESULTS / "batched-gemma.json").write_text(json.dumps(batched))
            text = page.render()[page.PAGE]
        self.assertIn("| 4 | Hearth | 120.0 | 50.0 | 90.0 | 20.0 |", text)   # the median of three rounds
        self.assertIn("| 4 | llama-server, fa on | 80.0 |", text)
        self.assertNotIn("| 16 | Hearth |", text)                           # the copied table is replaced
        self.assertIn("| `gemma-3-270m-q4_k_m.gguf` | 1 | 6.0 | 4.0 | 15.0 | 9.0 |", text)   # means of the runs
        self.assertIn("| `phi3-mini-q4_0.gguf` | 8 |", text)                 # the other model's copied run stays

    def test_copied_results_name_their_source(self):
        for path in sorted(page.RESULTS.glob("*.json")):
            d = json.loads(path.read_text())
            if d.get("schema") != 2:
                self.assertIn("source", d, path.name)


if __name__ == "__main__":
    unittest.main()
