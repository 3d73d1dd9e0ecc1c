package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.testing.BrowserTest;
import dev.layover.testing.TestDatabase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;

/**
 * Every page of a busy console read at a glance, in a real headless Chromium at 1280 and 400 px:
 * no text clipped (no element whose content is wider than its box, except text folded on purpose
 * and, at 400 px, tables scrolling in their own box), the page never wider than the screen, and at
 * 1280 px no table scrolling sideways. Screenshots of each page at each width go to
 * {@code target/screenshots/glance-*.png}; what each page leads with is checked at 1280 px, and
 * under a dark system theme the pages are dark. Times: one zone, named, local or UTC at a click,
 * and date filters read in it.
 */
@BrowserTest
class BrowserAtAGlanceTest {

    private BusyConsole busy;
    private Browser browser;

    @BeforeEach
    void chromium() {
        Browser.requireChromium();
    }

    @AfterEach
    void stop() throws Exception {
        if (browser != null) {
            browser.close();
        }
        if (busy != null) {
            busy.close();
        }
    }

    /**
     * The elements whose content is wider than their box, described; {@code arguments[0]}: whether
     * a table may scroll in its box (a narrow screen).
     */
    static final String CLIPPED = """
            const narrow = arguments[0];
            const out = [];
            const describe = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
                + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\\s+/).join('.') : '');
            for (const e of document.querySelectorAll('body *')) {
              if (e.closest('[hidden]') || e.closest('.fold:not(.open)') || e.closest('svg') || e.closest('.sr-only')) continue;
              if (/^(INPUT|TEXTAREA|SELECT|OPTION|IMG|BR)$/.test(e.tagName)) continue;
              const cs = getComputedStyle(e);
              if (cs.display === 'inline' || cs.display === 'none' || cs.visibility === 'hidden') continue;
              if (e.clientWidth === 0) continue;
              const scrollBox = cs.overflowX === 'auto' || cs.overflowX === 'scroll';
              if (scrollBox && (narrow || !e.classList.contains('table-wrap'))) continue;
              if (e.scrollWidth > e.clientWidth + 1) {
                let path = describe(e);
                for (let p = e.parentElement; p && p !== document.body && path.length < 160; p = p.parentElement) {
                  if (p.id) { path = '#' + p.id + ' > ' + path; break; }
                }
                out.push(path + ' [' + e.scrollWidth + ' > ' + e.clientWidth + ']: '
                    + (e.innerText || '').replace(/\\s+/g, ' ').slice(0, 80));
              }
            }
            if (document.documentElement.scrollWidth > document.documentElement.clientWidth) {
              out.push('the page itself [' + document.documentElement.scrollWidth + ' > ' + document.documentElement.clientWidth + ']');
            }
            return out;""";

    /** Every page, by a short name. */
    private Map<String, String> pages() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("overview", "#/overview");
        p.put("dead-letters", "#/dead-letters");
        p.put("dead-letter", "#/dead-letters/" + busy.deadLetterId);
        p.put("jobs", "#/jobs");
        p.put("history", "#/history");
        p.put("job", "#/job/translate/doc-3");
        p.put("key-model", "#/provider-keys/" + BusyConsole.MODEL);
        p.put("key-endpoint", "#/provider-keys/" + BusyConsole.PRIMARY);
        p.put("key-outage", "#/provider-keys/" + BusyConsole.BROKEN);
        p.put("breakers", "#/breakers");
        p.put("batches", "#/batches");
        p.put("batch", "#/batches/" + busy.batchId);
        p.put("workers", "#/workers");
        p.put("audit", "#/audit");
        return p;
    }

    @Test
    void everyPageFitsItsContentAt1280And400Pixels(TestDatabase db) throws Exception {
        busy = new BusyConsole(db);
        List<String> clipped = new ArrayList<>();
        for (int width : new int[] {1280, 400}) {
            browser = new Browser(width, 900);
            browser.driver.get(busy.console.loginUrl().toString());
            browser.visible("#provider-keys");
            for (Map.Entry<String, String> page : pages().entrySet()) {
                browser.driver.get(busy.console.url() + page.getValue());
                rendered();
                browser.waiting().until(d -> Boolean.TRUE.equals(browser.js(
                        "return [...document.images].every(i => i.complete)")));
                @SuppressWarnings("unchecked")
                List<String> found = (List<String>) browser.js(CLIPPED, width < 700);
                found.forEach(f -> clipped.add(page.getKey() + " @" + width + ": " + f));
                if (width == 1280) {
                    whatEachPageSays(page.getKey());
                }
                browser.screenshot("glance-" + page.getKey() + "-" + width + ".png");
            }
            browser.close();
            browser = null;
        }
        assertEquals(List.of(), clipped, "clipped text or overflow:\n" + String.join("\n", clipped));

        // a dark system theme: the same pages, dark
        browser = new Browser(1280, 900);
        browser.driver.executeCdpCommand("Emulation.setEmulatedMedia", Map.of("features",
                List.of(Map.of("name", "prefers-color-scheme", "value", "dark"))));
        browser.driver.get(busy.console.loginUrl().toString());
        browser.visible("#provider-keys");
        for (String page : List.of("overview", "jobs", "key-model")) {
            browser.driver.get(busy.console.url() + pages().get(page));
            rendered();
            double background = luminance((String) browser.js("return getComputedStyle(document.body).backgroundColor"));
            double card = luminance((String) browser.js("return getComputedStyle(document.querySelector('.card')).backgroundColor"));
            double text = luminance((String) browser.js("return getComputedStyle(document.querySelector('main h1')).color"));
            assertTrue(background < 0.1 && card < 0.15 && text > 0.6, page + ": dark page, light text: background " + background
                    + ", card " + card + ", text " + text);
            browser.screenshot("glance-dark-" + page + "-1280.png");
        }
    }

    @Test
    void everyTimeIsInOneNamedZoneSwitchableBetweenLocalAndUtcAndDateFiltersAreReadInIt(TestDatabase db) throws Exception {
        Layover layover = Fixtures.layover(db, Fixtures.work()).build();
        ReplayConsole console = ReplayConsole.start(layover, Fixtures.options());
        try {
            ConsolePagesApiTest.history(db, "work", "order-a", "completed", "test:provider", Instant.parse("2025-06-01T10:00:00Z"), null);
            ConsolePagesApiTest.history(db, "work", "order-b", "completed", "test:provider", Instant.parse("2025-06-01T12:00:00Z"), null);
            browser = new Browser(1280, 900);
            browser.driver.executeCdpCommand("Emulation.setTimezoneOverride", Map.of("timezoneId", "Asia/Kolkata")); // UTC+05:30
            browser.driver.get(console.loginUrl() + "#/history");
            rendered();
            assertEquals("Times: local", text("#tz"));
            String title = browser.driver.findElement(By.id("tz")).getAttribute("title");
            assertTrue(title.contains("UTC+05:30") && title.contains("Asia/"), title); // Chromium names it Asia/Calcutta
            assertTrue(text("#history tr[data-job='work/order-a']").contains("2025-06-01 15:30:00"), "local: "
                    + text("#history tr[data-job='work/order-a']"));
            assertTrue(text("#history-filters").contains("Finished from (local)"));

            // local: 16:00 in Kolkata is 10:30 UTC, after order-a
            filterFrom("2025-06-01T16:00:00");
            assertTrue(browser.driver.getCurrentUrl().contains("from=2025-06-01T10%3A30%3A00.000Z"), browser.driver.getCurrentUrl());
            assertEquals(List.of("work/order-b"), shownJobs());

            browser.driver.findElement(By.id("tz")).click();
            browser.waiting().until(d -> text("#tz").equals("Times: UTC") && text("#history-filters").contains("Finished from (UTC)"));
            assertTrue(text("#history tr[data-job='work/order-b']").contains("2025-06-01 12:00:00"), "UTC: "
                    + text("#history tr[data-job='work/order-b']"));
            assertTrue(String.valueOf(browser.js("return document.getElementById('h-from').value")).matches("2025-06-01T10:30(:00)?"),
                    "the same instant, shown in UTC"); // Chromium leaves out :00

            // UTC: 09:00 is before both
            filterFrom("2025-06-01T09:00:00");
            assertTrue(browser.driver.getCurrentUrl().contains("from=2025-06-01T09%3A00%3A00.000Z"), browser.driver.getCurrentUrl());
            assertEquals(List.of("work/order-b", "work/order-a"), shownJobs());

            browser.driver.navigate().refresh();
            rendered();
            assertEquals("Times: UTC", text("#tz"), "the choice is kept in this browser");
            browser.driver.get(console.url() + "#/overview");
            rendered();
            assertTrue(text("#updated").endsWith("(UTC)"), text("#updated"));
            browser.waiting().until(d -> String.valueOf(browser.js("return document.querySelector('img.chart-img').getAttribute('src')"))
                    .contains("tz=UTC"));
            browser.screenshot("glance-zone-utc-overview-1280.png");
        } finally {
            console.close();
            layover.stop();
        }
    }

    private void filterFrom(String value) {
        browser.js("document.getElementById('h-from').value = arguments[0];", value);
        String before = browser.driver.getCurrentUrl();
        browser.driver.findElement(By.id("history-apply")).click();
        browser.waiting().until(d -> !d.getCurrentUrl().equals(before));
        rendered();
    }

    private List<String> shownJobs() {
        List<String> out = new ArrayList<>();
        browser.driver.findElements(By.cssSelector("#history tbody tr[data-job]")).forEach(r -> out.add(r.getAttribute("data-job")));
        return out;
    }

    private void rendered() {
        browser.waiting().until(d -> Boolean.TRUE.equals(browser.js(
                "return document.getElementById('main').getAttribute('data-rendered') === location.hash")));
    }

    /** Relative luminance (0 black, 1 white) of a CSS rgb()/rgba() color. */
    private static double luminance(String rgb) {
        String[] p = rgb.replaceAll("[^0-9.,]", "").split(",");
        double[] c = new double[3];
        for (int i = 0; i < 3; i++) {
            double v = Double.parseDouble(p[i]) / 255;
            c[i] = v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
        }
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    }

    private String text(String css) {
        return browser.driver.findElement(By.cssSelector(css)).getText();
    }

    /** What the operator reads first on each page (at 1280 px). */
    private void whatEachPageSays(String page) {
        switch (page) {
            case "overview" -> {
                String outage = text(".notice.outage[data-outage='" + BusyConsole.BROKEN + "']");
                assertTrue(outage.contains("The recovery sweep will replay") && outage.contains("breaker_open")
                        && outage.contains("once the breaker closes") && outage.contains("Next trial:"), outage);
                assertTrue(text("#tz").startsWith("Times: "), "the zone is named in the header");
                assertTrue(text("#updated").contains("(UTC"), "the database time names its zone: " + text("#updated"));
            }
            case "jobs" -> {
                String cooling = text("#jobs-summary-groups .why-group[data-why='cooldown'][data-key='" + BusyConsole.COOLING + "']");
                assertTrue(cooling.matches("(?s)\\d+\\s+(\\d+ due\\s+)?cooldown.*cools down until .*\\(in (19|20) min\\).*"), cooling);
                String later = text("#jobs-summary-groups .why-group[data-why='new'][data-key='" + BusyConsole.MODEL + "']");
                assertTrue(later.startsWith("25") && later.contains("(in 2.0 h)"), later);
                assertFalse(text("#jobs").contains("cools down until"), "the rows do not repeat what the summary says");
            }
            case "key-model" -> {
                String endpoints = text("#key-endpoints-table");
                assertTrue(endpoints.contains(BusyConsole.SECONDARY) && endpoints.contains(BusyConsole.PRIMARY), endpoints);
                String href = browser.driver.findElement(By.cssSelector("#key-endpoints-table tr[data-endpoint='"
                        + BusyConsole.PRIMARY + "'] a.key-link")).getAttribute("href");
                assertEquals("#/provider-keys/" + BusyConsole.PRIMARY, java.net.URLDecoder.decode(
                        href.substring(href.indexOf('#')), java.nio.charset.StandardCharsets.UTF_8), "the model key's page links its endpoints");
                assertTrue(text("#limit-workers-table").contains("applied"), text("#limit-workers-table"));
                assertTrue(text("#bucket-override").contains("300 req/min in force, applied by 1 of 1 worker"), text("#bucket-override"));
                assertEquals(5L, browser.js("return document.querySelectorAll('#charts img.chart-img').length"), "the calls chart too");
            }
            case "key-endpoint" -> {
                String asEndpoint = text("#key-as-endpoint");
                assertTrue(asEndpoint.matches("(?s).*calls\\s+(\\d+).*429s\\s+\\1.*") && asEndpoint.contains(BusyConsole.MODEL),
                        "every call of the primary was a 429: " + asEndpoint);
            }
            case "key-outage" -> assertTrue(text(".notice.outage").contains("Next trial:"));
            case "workers" -> {
                String row = "#workers tr[data-worker='" + BusyConsole.WORKER + "'] ";
                assertEquals("alive", text(row + "td:nth-child(1)"));
                assertTrue(text(row + "td:nth-child(2)").matches("(just now|\\d+ s ago)"), text(row + "td:nth-child(2)"));
                assertEquals("4", text(row + "td:nth-child(4)"), "threads");
            }
            default -> { }
        }
    }
}
