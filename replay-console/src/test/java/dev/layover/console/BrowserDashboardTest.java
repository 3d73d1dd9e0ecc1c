package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.testing.Await;
import dev.layover.testing.BrowserTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

/**
 * The operator's dashboard parts in a real headless Chromium: a failed attempt's stack trace
 * folded on the dead letter and job pages; the time series charts on the overview and a provider
 * key's page, drawn from what real jobs did. Screenshots go to {@code target/screenshots/}.
 */
@BrowserTest
class BrowserDashboardTest extends ConsoleInBrowser {

    static final String SECRET = "sk-proj-VerySecret0123456789";

    @Test
    void aFailedAttemptsStackTraceIsFoldedOnTheDeadLetterAndJobPages(TestDatabase db) throws IOException {
        JobType<Fixtures.Work> type = Fixtures.work((args, ctx) -> {
            throw new IllegalStateException("upstream refused api_key=" + SECRET + " <b>bold</b>",
                    new java.io.IOException("connection reset"));
        });
        layover = Fixtures.layover(db, type).start();
        console = ReplayConsole.start(layover, Fixtures.options());
        String id = layover.enqueue(type, new Fixtures.Work("boom", 1)).id();
        Await.until(Fixtures.WAIT, "the job parked", () -> db.count("select count(*) from layover.dead_letters where job_id = ?", id) == 1);
        long dl = ((Number) db.value("select id from layover.dead_letters where job_id = ?", id)).longValue();

        browser = new Browser(1400, 1000);
        browser.driver.get(console.loginUrl() + "#/dead-letters/" + dl);
        browser.visible("#attempts");
        WebElement trace = browser.driver.findElement(By.cssSelector("#attempts details.trace"));
        assertFalse(trace.getAttribute("open") != null, "folded until clicked");
        assertEquals(3, browser.driver.findElements(By.cssSelector("#attempts details.trace")).size(), "one per failed attempt");
        browser.screenshot("dead-letter-trace-folded.png");
        trace.findElement(By.tagName("summary")).click();
        WebElement pre = trace.findElement(By.cssSelector("pre.trace-text"));
        browser.waiting().until(d -> pre.isDisplayed());
        String text = pre.getText();
        assertTrue(text.startsWith("java.lang.IllegalStateException: upstream refused api_key=[masked] <b>bold</b>"), text);
        assertTrue(text.contains("Caused by: java.io.IOException: connection reset"), text);
        assertTrue(text.contains("at dev.layover.console.BrowserDashboardTest"), text);
        assertFalse(browser.driver.findElement(By.tagName("main")).getText().contains("VerySecret"), "the key is masked on screen");
        assertEquals(0L, browser.js("return document.querySelectorAll('main b').length"), "markup shown as text");
        browser.screenshot("dead-letter-trace-open.png");

        browser.driver.get(console.url() + "#/job/work/" + id);
        browser.visible("#job-dead-letters");
        WebElement jobTrace = browser.driver.findElement(By.cssSelector("#job-dead-letters details.trace"));
        assertFalse(jobTrace.findElement(By.cssSelector("pre.trace-text")).isDisplayed(), "folded");
        jobTrace.findElement(By.tagName("summary")).click();
        browser.waiting().until(d -> jobTrace.findElement(By.cssSelector("pre.trace-text")).isDisplayed());
        assertTrue(jobTrace.getText().contains("Caused by: java.io.IOException: connection reset"), jobTrace.getText());
        browser.screenshot("job-run-trace.png");
    }

    @Test
    void theOverviewAndAKeysPageChartWhatJobsDid(TestDatabase db) throws IOException {
        java.util.Map<String, java.util.concurrent.atomic.AtomicInteger> runs = new java.util.concurrent.ConcurrentHashMap<>();
        JobType<Fixtures.Work> type = Fixtures.work((args, ctx) -> {
            int run = runs.computeIfAbsent(ctx.jobId(), k -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet();
            return switch (args.name()) {
                case "limited" -> run == 1 ? dev.layover.core.outcome.Outcome.rateLimited(java.time.Duration.ofMillis(20), "429")
                        : dev.layover.core.outcome.Outcome.done();
                case "bad" -> dev.layover.core.outcome.Outcome.rejected("400 <b>no</b>");
                default -> dev.layover.core.outcome.Outcome.done();
            };
        });
        layover = Fixtures.layover(db, type).timeSeriesFlushInterval(java.time.Duration.ofMillis(200)).start();
        console = ReplayConsole.start(layover, Fixtures.options());
        for (int i = 0; i < 12; i++) {
            layover.enqueue(type, new Fixtures.Work("ok", i));
        }
        layover.enqueue(type, new Fixtures.Work("limited", 0));
        layover.enqueue(type, new Fixtures.Work("bad", 0));
        layover.enqueue(type, new Fixtures.Work("later", 0), dev.layover.core.EnqueueOptions.after(java.time.Duration.ofHours(1)));
        Await.until(Fixtures.WAIT, "the counts are written", () -> ((Number) db.value(
                "SELECT coalesce(sum(amount), 0) FROM layover.time_series WHERE bucket_seconds = 60 AND counter = 'completed'"))
                .longValue() == 13 && db.count("SELECT count(*) FROM layover.time_series WHERE counter = 'parked'") > 0
                && db.count("SELECT count(*) FROM layover.time_series WHERE counter = 'waiting'") > 0);

        browser = new Browser(1400, 1000);
        browser.driver.get(console.loginUrl().toString());
        browser.visible("#charts");
        String loaded = "return [...document.querySelectorAll('#charts img')].every(i => i.complete && i.naturalWidth > 0)"
                + " && document.querySelectorAll('#charts img').length === 4";
        browser.waiting().until(d -> Boolean.TRUE.equals(browser.js(loaded)));
        assertEquals(List.of("throughput", "limits", "failures", "depth"), browser.js(
                "return [...document.querySelectorAll('#charts img')].map(i => i.getAttribute('data-chart'))"));
        assertTrue(((String) browser.js("return document.querySelector('#charts img[data-chart=throughput]').src"))
                .contains("resolution=10s"), "the last hour per 10 s by default");
        browser.js("document.getElementById('charts').scrollIntoView()");
        browser.screenshot("overview-charts.png");

        browser.driver.findElement(By.cssSelector("#chart-windows button[data-window='24h']")).click();
        browser.waiting().until(d -> ((String) browser.js("return document.querySelector('#charts img[data-chart=limits]').src"))
                .contains("minutes=1440"));
        browser.waiting().until(d -> Boolean.TRUE.equals(browser.js(loaded)));

        browser.driver.get(console.url() + "#/provider-keys/test%3Aprovider");
        browser.visible("#key-jobs");
        browser.waiting().until(d -> Boolean.TRUE.equals(browser.js(loaded)));
        assertTrue(((String) browser.js("return document.querySelector('#charts img[data-chart=failures]').src"))
                .contains("providerKey=test%3Aprovider"));
        assertEquals(0L, browser.js("return document.querySelectorAll('main b').length"));
        browser.js("document.getElementById('charts').scrollIntoView()");
        browser.screenshot("provider-key-charts.png");

        browser.close();
        browser = new Browser(400, 900);
        browser.driver.get(console.loginUrl().toString());
        browser.visible("#charts");
        browser.waiting().until(d -> Boolean.TRUE.equals(browser.js(loaded)));
        assertTrue((Long) browser.js("return document.documentElement.scrollWidth")
                <= (Long) browser.js("return document.documentElement.clientWidth"), "the charts fit 400 px");
        browser.js("document.getElementById('charts').scrollIntoView()");
        browser.screenshot("narrow-charts.png");
    }
}
