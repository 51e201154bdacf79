"""The chat page of `hearth serve` in headless Chromium driven by selenium (see check-ollama.sh).

Usage: check_chat_page.py BASE_URL FIRST_MODEL SECOND_MODEL SCREENSHOT_PATH
"""
import json
import re
import shutil
import sys
import time
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

base, first, second, screenshot = sys.argv[1:5]
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("PASS " if condition else "FAIL ") + name + ("" if condition else f" {str(detail)[:600]}"))


def wait(predicate, timeout=60.0, step=0.05):
    """Polls until predicate() is truthy; returns its last value."""
    end = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < end:
        time.sleep(step)
        value = predicate()
    return value


options = webdriver.ChromeOptions()
options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,860",
             "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-default-apps", "--disable-extensions", "--metrics-recording-only", "--no-default-browser-check"]:
    options.add_argument(flag)
options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
driver.set_script_timeout(30)
requested = []  # every URL the page asked for (CDP Network.requestWillBeSent), across the whole run


def drain_log():
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])


def state():
    return driver.find_element(By.TAG_NAME, "body").get_attribute("data-state")


def texts(selector):
    """The text of every element matching selector, read in one script (the page re-renders as it streams)."""
    return driver.execute_script("return Array.from(document.querySelectorAll(arguments[0])).map((e) => e.innerText)", selector)


def last_reply():
    replies = texts(".msg.assistant .content")
    return replies[-1] if replies else ""


def running():
    """hearth_requests_running from /metrics."""
    text = urllib.request.urlopen(base + "/metrics").read().decode()
    match = re.search(r"^hearth_requests_running (\S+)$", text, re.M)
    return float(match.group(1)) if match else -1


def send(text):
    box = driver.find_element(By.ID, "input")
    box.send_keys(text)
    box.send_keys(Keys.ENTER)


try:
    started = time.monotonic()
    driver.get(base + "/")
    check("the page loads with the server's models",
          wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#model option")) == 2, 15),
          driver.page_source[:400])
    Select(driver.find_element(By.ID, "model")).select_by_visible_text(first)

    # A message: streamed text arrives in several paints, then the reply ends with its stats.
    # Every text the reply shows on its way, recorded in the page (no polling gaps).
    driver.execute_script(
        """
        window.__texts = new Set();
        new MutationObserver(() => {
          const r = document.querySelectorAll('.msg.assistant .content');
          if (r.length && document.body.dataset.state === 'streaming') window.__texts.add(r[r.length - 1].textContent);
        }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
        """)
    send("Say hello in one short sentence.")
    check("sending starts a stream", wait(lambda: state() == "streaming", 10))
    wait(lambda: state() == "idle", 90)
    seen = set(driver.execute_script("return Array.from(window.__texts)"))
    seen.discard("")
    done = driver.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-done='1']")
    stats = texts(".msg.assistant .stats")
    check("the reply streams in (text seen growing) and ends", state() == "idle" and len(seen) >= 2 and done and last_reply(),
          f"state {state()}, seen {len(seen)}: {last_reply()!r}")
    check("the reply shows tokens, tokens/s and context use", stats and "tokens" in stats[-1] and "context" in stats[-1],
          stats[-1] if stats else "no stats")

    # A long reply, stopped: the stream ends at once, the text stops growing, and the server
    # frees the request. The default model is a base model that answers briefly, so the test
    # asks the server for a long reply (greedy, ignore_eos, 1500 tokens) by adding those fields
    # to the page's own request (the page is unchanged).
    driver.execute_script(
        """
        window.__fetch = window.__fetch || window.fetch;
        window.fetch = (url, init) => {
          if (String(url).endsWith('/v1/chat/completions') && init && init.body) {
            const body = JSON.parse(init.body);
            Object.assign(body, {temperature: 0, ignore_eos: true, max_tokens: 1500});
            init = Object.assign({}, init, {body: JSON.stringify(body)});
          }
          return window.__fetch(url, init);
        };
        """)
    long_prompt = ("Please write the numbers from 1 to 200 in words: one, two, three, four, five, six, seven, eight, nine, ten, "
                   "eleven, twelve,")
    # A new conversation (Ctrl+K): the base model's dialogue ends early after earlier turns.
    driver.find_element(By.ID, "input").send_keys(Keys.CONTROL, "k")
    wait(lambda: not texts(".msg .content"), 5)
    send(long_prompt)
    wait(lambda: state() == "streaming", 10)
    grown = wait(lambda: len(last_reply()) > 60 or state() == "idle", 60) and state() == "streaming"
    at_stop = last_reply()
    driver.execute_script("document.getElementById('stop').click()")
    stopped = wait(lambda: state() == "idle", 5)
    text_then = last_reply()
    time.sleep(0.8)
    stats = texts(".msg.assistant .stats")
    freed = wait(lambda: running() == 0, 5, 0.1)
    check("Stop aborts a long reply (the text stops, the server frees the request)",
          grown and stopped and last_reply() == text_then and stats and "stopped" in stats[-1] and freed,
          f"grown {grown}, stopped {stopped}, freed {freed}, stats {stats[-1] if stats else None}")
    print(f"  stopped after {len(at_stop)} characters: {at_stop[:80]!r}…, kept {len(text_then)}")
    # Esc stops too.
    driver.find_element(By.ID, "input").send_keys(Keys.CONTROL, "k")
    wait(lambda: not texts(".msg .content"), 5)
    send(long_prompt)
    wait(lambda: state() == "streaming", 10)
    wait(lambda: len(last_reply()) > 10, 60)
    driver.find_element(By.ID, "input").send_keys(Keys.ESCAPE)
    check("Esc stops a reply", wait(lambda: state() == "idle", 5) and wait(lambda: running() == 0, 5, 0.1))
    driver.execute_script("window.fetch = window.__fetch;")

    # Another model: the next reply comes from it (and the server now has it loaded).
    Select(driver.find_element(By.ID, "model")).select_by_visible_text(second)
    send("Name a color.")
    wait(lambda: state() == "streaming", 10)
    wait(lambda: state() == "idle", 90)
    who = texts(".msg.assistant .who")
    ps = json.loads(urllib.request.urlopen(base + "/api/ps").read())
    check("switching the model: the reply comes from the second model",
          who and who[-1].lower() == second.lower() and last_reply() and any(m["name"] == second for m in ps["models"]),
          f"{who[-1] if who else None}, ps {ps}")

    # Reload: the conversation is still there (localStorage), and so is the chosen model.
    before = texts(".msg .content")
    listed = texts("#convs li")
    driver.refresh()
    wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#model option")) == 2, 15)
    after = texts(".msg .content")
    check("reload finds the conversations", len(before) >= 4 and after == before and len(listed) == 3 and texts("#convs li") == listed,
          f"{before} vs {after}, {listed}")
    check("reload keeps the chosen model", Select(driver.find_element(By.ID, "model")).first_selected_option.text == second)
    driver.save_screenshot(screenshot)
    check("screenshot saved", True)

    # A stored reply holding HTML renders as text: no script runs, no element is made from it.
    hostile = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"> and **bold** text"
    driver.execute_script(
        """
        const s = JSON.parse(localStorage.getItem('hearth.chat.v1'));
        const c = {id: 'xss', title: 'markup', created: Date.now(), messages: [
          {role: 'user', content: arguments[0]}, {role: 'assistant', content: arguments[0], model: 'x'}]};
        s.conversations.unshift(c); s.current = 'xss';
        localStorage.setItem('hearth.chat.v1', JSON.stringify(s));
        """, hostile)
    driver.refresh()
    wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, ".msg.assistant .content")) == 1, 10)
    content = driver.find_element(By.CSS_SELECTOR, ".msg.assistant .content")
    pwned = driver.execute_script("return window.__pwned === undefined ? null : window.__pwned")
    made = driver.execute_script("return document.querySelectorAll('.msg script, .msg img').length")
    bold = content.find_elements(By.TAG_NAME, "strong")
    check("a reply containing <script> renders as text", "<script>window.__pwned = 1</script>" in content.text and pwned is None
          and made == 0 and bold and bold[0].text == "bold", f"text {content.text!r}, pwned {pwned}, elements {made}")

    # Every request the page made went to the server.
    drain_log()
    origin = urllib.parse.urlsplit(base)
    foreign = [u for u in requested if not u.startswith("data:") and urllib.parse.urlsplit(u)[:2] != origin[:2]]
    check("the page asked no host but the server", requested and not foreign, foreign or "no requests logged")
    print(f"browser: {len(requested)} requests, {time.monotonic() - started:.1f} s")
finally:
    driver.quit()

print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
