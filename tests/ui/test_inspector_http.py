"""The inspector's HTTP behaviour without a browser: auth forms, redirects, headers, bad input."""

from __future__ import annotations

import httpx
import pytest

from memlane.server.inspector.auth import COOKIE_NAME
from tests.ui.conftest import ACME_KEY, ADMIN_KEY, GLOBEX_MARKER, Seeded


def test_scripts_can_send_the_key_as_on_the_api(server: str, seeded: Seeded) -> None:
    for headers in ({"Authorization": f"Bearer {ACME_KEY}"}, {"X-API-Key": ACME_KEY}):
        page = httpx.get(f"{server}/inspect", headers=headers)
        assert page.status_code == 200
        assert "trip-lisbon" in page.text and GLOBEX_MARKER not in page.text
    wrong = httpx.get(f"{server}/inspect", headers={"Authorization": "Bearer not-a-configured-key"})
    assert wrong.status_code == 401
    assert "invalid API key" in wrong.text and "trip-lisbon" not in wrong.text


def test_without_a_key_every_page_redirects_to_the_login(server: str, seeded: Seeded) -> None:
    for path in ("/inspect", "/inspect/search?q=x", "/inspect/stats", f"/inspect/episodes/{seeded.chain[0]}"):
        response = httpx.get(server + path)
        assert response.status_code == 303, path
        assert response.headers["location"].startswith("/inspect/login?next=%2Finspect")


def test_pages_are_sent_with_a_no_script_policy(server: str) -> None:
    page = httpx.get(f"{server}/inspect/search?q=vegetarian", headers={"X-API-Key": ACME_KEY})
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"
    assert "<script" not in page.text
    css = httpx.get(f"{server}/inspect/static/inspector.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


def test_login_sets_a_strict_cookie_and_refuses_other_sites(server: str) -> None:
    with httpx.Client(base_url=server) as client:
        refused = client.post(
            "/inspect/login", data={"key": ACME_KEY}, headers={"Origin": "https://evil.example"}
        )
        assert refused.status_code == 403
        assert COOKIE_NAME not in client.cookies
        ok = client.post("/inspect/login", data={"key": ACME_KEY, "next": "//evil.example/x"})
        assert ok.status_code == 303
        assert ok.headers["location"] == "/inspect"  # no open redirect
        cookie = ok.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/inspect" in cookie
        assert ACME_KEY not in cookie
        assert client.get("/inspect").status_code == 200  # the cookie alone logs in
        out = client.post("/inspect/logout")
        assert out.status_code == 303
        client.cookies.clear()


def test_an_admin_key_still_acts_as_its_tenant_on_the_api(server: str) -> None:
    listed = httpx.get(f"{server}/v1/episodes?scope=tenant", headers={"X-API-Key": ADMIN_KEY})
    assert listed.status_code == 200
    assert listed.json()["count"] == 0  # tenant 'ops' has no episodes; roles only widen the inspector


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("status=bogus", "status must be one of"),
        ("limit=0", "limit must be between 1 and 1000"),
        ("start=yesterday", "start must be a date"),
        ("axis=sideways", "axis must be one of"),
    ],
)
def test_bad_filters_are_an_html_422(server: str, query: str, message: str) -> None:
    page = httpx.get(f"{server}/inspect?{query}", headers={"X-API-Key": ACME_KEY})
    assert page.status_code == 422
    assert message in page.text and "text/html" in page.headers["content-type"]


def test_a_replayed_search_shows_its_time_and_keeps_it_in_the_form(server: str) -> None:
    """``now=`` replays the recall then: the page says so and the form keeps it for the next Apply."""
    page = httpx.get(
        f"{server}/inspect/search?q=vegetarian&now=2025-03-15T12:00", headers={"X-API-Key": ACME_KEY}
    )
    assert page.status_code == 200, page.text
    assert 'id="f-now" value="2025-03-15T12:00"' in page.text
    assert "2025-03-15" in page.text.split("Recall as of", 1)[1][:200]
    plain = httpx.get(f"{server}/inspect/search?q=vegetarian", headers={"X-API-Key": ACME_KEY})
    assert 'id="f-now" value=""' in plain.text  # no replay: the clock's now, and the field stays empty


def test_the_sessions_page_lists_the_agent_and_user_ids_with_conversations(
    server: str, seeded: Seeded
) -> None:
    headers = {"Authorization": f"Bearer {ACME_KEY}"}
    page = httpx.get(f"{server}/inspect/sessions", headers=headers)
    assert page.status_code == 200
    assert "Agent / user with stored conversations" in page.text
    assert 'href="/inspect/sessions?agent=travel-agent&amp;user=ana"' in page.text
    listed = httpx.get(f"{server}/inspect/sessions?agent=travel-agent&user=ana", headers=headers)
    assert listed.status_code == 200 and "Stored conversation" in listed.text


def test_the_tag_filter_reads_tags_as_the_api_does(server: str, seeded: Seeded) -> None:
    headers = {"Authorization": f"Bearer {ACME_KEY}"}
    sintra = "day trip to Sintra"
    both = httpx.get(f"{server}/inspect?tag=lisbon&tag=train&status=all", headers=headers)
    assert both.status_code == 200 and sintra in both.text
    assert both.text.count('name="tag"') == 3  # the two tags, and a field for one more
    comma = httpx.get(f"{server}/inspect", params={"tag": "lisbon,train", "status": "all"}, headers=headers)
    assert comma.status_code == 200 and sintra not in comma.text  # one tag "lisbon,train", as on the API
    api = httpx.get(f"{server}/v1/episodes", params={"tag": "lisbon,train"}, headers=headers)
    assert api.status_code == 200 and api.json()["count"] == 0
    api_both = httpx.get(
        f"{server}/v1/episodes", params=[("tag", "lisbon"), ("tag", "train")], headers=headers
    )
    assert [e["content"] for e in api_both.json()["episodes"] if sintra in e["content"]]
