"""Emoji and CJK substrings are findable on both backends, and a query starting with `-` goes
after `--` on the command line (issue 18, item 5)."""

from __future__ import annotations

from click.testing import CliRunner

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.cli import main
from sessionstore.search import parse_query


def _fill(store: SessionStore) -> str:
    sid = store.create_session()
    store.append(sid, [
        ss.user("日本語のテキストを検索する"),
        ss.assistant("🚨 the build is red: dialyzer found 3 warnings"),
        ss.tool_call("c1", "Bash", {"command": "grep -rn 警告 src/"}),
        ss.tool_result("c1", "src/app.ex:12: 警告 unused variable"),
        ss.user("Deploy 🚀 after the fix, not before"),
        ss.assistant([{"type": "thinking", "thinking": "plain words only", "signature": "🚨日本sig"}]),
    ])
    return sid


def test_emoji_and_cjk_substrings_are_found(store: SessionStore) -> None:
    sid = _fill(store)
    assert [h.version for h in store.search("日本")] == [1]  # inside the word 日本語, not in a signature
    assert [h.version for h in store.search("検索")] == [1]
    assert [h.version for h in store.search("🚨")] == [2]
    assert [h.version for h in store.search("🚨 dialyzer")] == [2]  # with a word: both must occur
    assert store.search("🚨 deploy") == []
    assert sorted(h.version for h in store.search("警告")) == [3, 4]
    assert [h.version for h in store.search("警告", kind="tool_result")] == [4]
    assert [h.version for h in store.search("警告", tool="Bash")] == [3, 4]
    assert sorted(h.version for h in store.search("🚀 OR dialyzer")) == [2, 5]
    assert [h.version for h in store.search("警告 -unused")] == [3]
    hit = store.search("🚨", session_id=sid)[0]
    assert hit.marked().startswith("[🚨] the build is red")
    assert store.search("日本", limit=1) and len(store.search("警告", limit=1)) == 1


def test_word_queries_still_use_the_index(store: SessionStore) -> None:
    _fill(store)
    assert [h.version for h in store.search("dialyzer")] == [2]
    assert not parse_query("dialyzer -flaky").scans and parse_query("日本").scans and parse_query("🚨").scans


def test_a_query_starting_with_a_minus_goes_after_double_dash(store_url: str) -> None:
    store = SessionStore(store_url)
    try:
        _fill(store)
    finally:
        store.close()
    runner = CliRunner()
    refused = runner.invoke(main, ["--db", store_url, "search", "-foo dialyzer"])
    assert refused.exit_code == 2  # click reads it as an option: the help says what to do
    found = runner.invoke(main, ["--db", store_url, "search", "--", "-foo dialyzer"])
    assert found.exit_code == 0 and "dialyzer" in found.stdout, found.output
    assert "--" in runner.invoke(main, ["search", "--help"]).stdout.split("starts with")[1][:80]
    emoji = runner.invoke(main, ["--db", store_url, "search", "🚨"])
    assert emoji.exit_code == 0 and "dialyzer" in emoji.stdout, emoji.output
