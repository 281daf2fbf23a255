"""The HTML validation report, rendered in headless Chromium as a reviewer
would open it: it loads, every plot decodes, no console errors."""
import shutil

import pytest

from conftest import cached_validate

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    from fmigen.verify.report import write_html
    report = cached_validate("slider_crank_joints", stop_time=1.0, solver="rk4", step=1e-3)
    path = tmp_path_factory.mktemp("report") / "slider_crank_joints.html"
    write_html(report, path)
    return report, path


def test_the_page_is_self_contained_and_says_what_passed(report_page):
    report, path = report_page
    text = path.read_text()
    assert report.passed and "slider_crank_joints: <span class=\"pass\">passed</span>" in text
    assert text.count('src="data:image/png;base64,') == 3
    assert "http://" not in text and "https://" not in text          # nothing to fetch
    for needle in ("reference <b>ida</b>", "reference <b>cartesian</b>", "energy drift", "constraint_residual",
                   "commit <code>", "Singular", "sympy", "tolerance: coordinate"):
        assert needle in text, needle


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                    reason="Debian's chromium and chromium-driver are not installed (scripts/setup.sh installs them)")
def test_the_page_renders_in_headless_chromium_with_every_image(report_page):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    _, path = report_page
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(path.as_uri())
        assert driver.title == "fmigen validation: slider_crank_joints"
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight])")
        assert len(images) == 3
        for alt, complete, width, height in images:
            assert complete and width > 300 and height > 100, (alt, width, height)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
    finally:
        driver.quit()
