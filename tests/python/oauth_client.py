"""The official Python SDK (mcp 2.3) with its own OAuth client (`mcp.client.auth.OAuthClientProvider`) against the
bookshop example served with `--auth-issuer`/`--auth-resource` over Streamable HTTP.

Usage: python oauth_client.py URL ERA SCENARIO CLIENT
  URL       the bookshop's endpoint, `http://127.0.0.1:PORT/mcp` (also its resource identifier)
  ERA       "legacy" (the 2025-11-25 initialize handshake) or "2026-07-28" (adopted directly, no probe)
  SCENARIO  "upfront": the first request is the connection's own (initialize, or tools/list in 2026), whose 401
            names every scope the bookshop's handlers need, so the SDK asks for those;
            "stepup": a first 2026 connection calls rebuild_index first, whose 401 names `books:admin`, so its
            token lacks `books:write`; then `order_book` (on that connection in the 2026 era, on a second
            connection after a restart, with the tokens kept in storage, in the legacy era) is 403
            insufficient_scope, and the SDK authorizes again for the union of the scopes.
  CLIENT    "dynamic" (the SDK registers itself, RFC 7591) or the id of a public client registered beforehand
            with the redirect URI `http://127.0.0.1/callback` (any port), handed to the SDK through its storage.

The SDK discovers everything from the 401 (protected resource metadata, authorization server metadata), registers
a public client dynamically or uses the one given, and builds the authorization URL; the redirect handler here plays
the user's browser (follows the provider's redirects with its cookies, never requests the redirect URI) and hands
`code`, `state` and `iss` to the SDK's callback handler. Tokens are stored in memory.

Prints one line `SUMMARY {json}` (tools seen, results, the tokens' claims, authorization round trips, what the
authorization server refused, registrations, every HTTP exchange with its status and challenge) and exits non-zero
on the first thing that is wrong; an OAuth flow that fails ends the run with the summary and `"failure"`, and exit
status 0, for the test to judge.
"""

import base64
import json
import socket
import sys
from urllib.parse import parse_qs, urljoin, urlparse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import (
    AuthorizationCodeResult,
    OAuthClientProvider,
    OAuthFlowError,
    OAuthRegistrationError,
    OAuthTokenError,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

MODERN = "2026-07-28"
TOOLS = ["cancel_hold", "list_holds", "order_book", "rebuild_index", "search_status"]


class MemoryStorage:
    """`TokenStorage` in memory; every token stored is kept, in order."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None
        self.history: list[OAuthToken] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.history.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def origin(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}"


class Browser:
    """The user's browser: the SDK's redirect handler and callback handler. Follows the authorization URL through
    the provider's redirects (its login and consent are approved by the harness) with the cookies it sets, and
    stops at the first redirect away from the provider's origin, the redirect URI, which it does not request."""

    def __init__(self, redirect_uri: str) -> None:
        self.redirect_uri = redirect_uri
        self.authorization_urls: list[str] = []
        # The redirects that carried an error instead of a code (the authorization server refused).
        self.refusals: list[dict] = []
        self.result: AuthorizationCodeResult | None = None
        # Kept from one authorization to the next, as a browser keeps the provider's session.
        self.cookies = httpx2.Cookies()

    async def redirect_handler(self, authorization_url: str) -> None:
        self.authorization_urls.append(authorization_url)
        provider = origin(authorization_url)
        url = authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10, cookies=self.cookies) as http:
            for _ in range(20):
                response = await http.get(url)
                if not response.is_redirect:
                    raise AssertionError(f"GET {url}: {response.status_code}\n{response.text}")
                url = urljoin(url, response.headers["location"])
                if origin(url) != provider:
                    break
            else:
                raise AssertionError(f"more than 20 redirects, the last to {url}")
            self.cookies = http.cookies
        assert url.startswith(self.redirect_uri + "?"), f"redirected to {url}, not to {self.redirect_uri}"
        query = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
        if "code" not in query:
            self.refusals.append(query)
            raise OAuthFlowError(f"the authorization server refused: {url}")
        self.result = AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None, "the callback came before the redirect"
        result, self.result = self.result, None
        return result


class Exchanges:
    """Every HTTP request the SDK's client sends (its own and its OAuth flow's), with the status and challenge of
    its response, through httpx2's event hooks."""

    def __init__(self) -> None:
        self.log: list[dict] = []

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        body = None
        if request.method == "POST" and request.headers.get("content-type", "").startswith("application/json"):
            try:
                body = json.loads(request.content)
            except ValueError:
                body = None
        self.log.append(
            {
                "method": request.method,
                "url": str(request.url).split("?")[0],
                "rpc": body.get("method") if isinstance(body, dict) else None,
                "status": response.status_code,
                "challenge": response.headers.get("www-authenticate"),
            }
        )


def claims(token: str) -> dict:
    """The payload of a JWT, unverified (the server verifies it; this is what the test asserts on)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Connection:
    """One OAuth client provider (the SDK's, with its discovery state) over the shared storage and browser."""

    def __init__(self, url: str, storage: MemoryStorage, browser: Browser, exchanges: Exchanges) -> None:
        self.url = url
        self.auth = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="mcp-rust tests/auth_python",
                redirect_uris=[browser.redirect_uri],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=browser.redirect_handler,
            callback_handler=browser.callback_handler,
        )
        self.exchanges = exchanges

    def client(self, era: str) -> tuple[httpx2.AsyncClient, Client]:
        http = httpx2.AsyncClient(
            auth=self.auth,
            timeout=httpx2.Timeout(30, read=120),
            event_hooks={"response": [self.exchanges.on_response]},
        )
        return http, Client(streamable_http_client(self.url, http_client=http), mode=era)


async def holds(client: Client) -> list[str]:
    result = await client.call_tool("list_holds", {})
    assert not result.is_error, result
    return list(result.structured_content["holds"])


async def order(client: Client, title: str) -> str:
    """Orders `title` and returns the result's text once it is paid (the bookshop waits 30 s for payment).

    Nothing else is sent meanwhile: the SDK's `OAuthClientProvider` holds its lock (`context.lock`) from sending a
    request until its response's headers arrive, so in the 2026 era, where the bookshop answers this call with one
    JSON body after 30 s, every other request on the connection would wait for it.
    """
    result = await client.call_tool("order_book", {"title": title})
    assert not result.is_error, result
    return result.content[0].text


def oauth_failures(error: BaseException) -> list[str]:
    """The OAuth errors inside `error` (the transport's task groups wrap them in exception groups)."""
    if isinstance(error, BaseExceptionGroup):
        return [m for e in error.exceptions for m in oauth_failures(e)]
    if isinstance(error, (OAuthFlowError, OAuthTokenError, OAuthRegistrationError)):
        return [f"{type(error).__name__}: {error}"]
    return []


async def main(url: str, era: str, scenario: str, client_id: str) -> None:
    storage = MemoryStorage()
    browser = Browser(f"http://127.0.0.1:{free_port()}/callback")
    if client_id != "dynamic":
        # Pre-registered client information reaches the SDK through its storage; then it registers nothing.
        await storage.set_client_info(
            OAuthClientInformationFull(
                client_id=client_id,
                redirect_uris=[browser.redirect_uri],
                token_endpoint_auth_method="none",
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
            )
        )
    exchanges = Exchanges()
    summary: dict = {"era": era, "scenario": scenario, "results": {}}
    connection = Connection(url, storage, browser, exchanges)

    try:
        if scenario == "stepup":
            # A 2026 connection whose first request is a call of a tool that needs books:admin.
            http, client = connection.client(MODERN)
            async with http, client:
                result = await client.call_tool("rebuild_index", {"titles": []})
                assert not result.is_error, result
                summary["results"]["rebuild_index"] = result.content[0].text
                summary["first_token"] = claims(storage.tokens.access_token)
                summary["first_token_scope"] = storage.tokens.scope
                if era == MODERN:
                    await use(client, summary)
            if era != MODERN:
                # The program restarts: a new provider, the tokens and the client's registration from storage.
                connection = Connection(url, storage, browser, exchanges)
                http, client = connection.client(era)
                async with http, client:
                    await use(client, summary)
        else:
            http, client = connection.client(era)
            async with http, client:
                await use(client, summary)
    except Exception as error:
        failures = oauth_failures(error)
        if not failures:
            raise
        summary["failure"] = failures

    summary["authorizations"] = len(browser.authorization_urls)
    summary["authorization_urls"] = browser.authorization_urls
    summary["refusals"] = browser.refusals
    summary["registrations"] = sum(1 for e in exchanges.log if e["url"].endswith("/reg") and e["method"] == "POST")
    summary["client_id"] = storage.client_info.client_id if storage.client_info else None
    summary["registered_scope"] = storage.client_info.scope if storage.client_info else None
    summary["token"] = claims(storage.tokens.access_token) if storage.tokens else None
    summary["token_scope"] = storage.tokens.scope if storage.tokens else None
    summary["tokens_stored"] = len(storage.history)
    summary["exchanges"] = exchanges.log
    print("SUMMARY " + json.dumps(summary))


async def use(client: Client, summary: dict) -> None:
    tools = await client.list_tools()
    summary["tools"] = sorted(t.name for t in tools.tools)
    assert summary["tools"] == TOOLS, summary["tools"]
    summary["results"]["list_holds"] = await holds(client)
    summary["results"]["order_book"] = await order(client, "Dune")
    summary["protocol_version"] = client.session.protocol_version


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])
    print("all ok")
