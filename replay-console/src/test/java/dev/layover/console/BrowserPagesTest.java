package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.testing.Await;
import dev.layover.testing.BrowserTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

/**
 * The History, job and provider key pages, the live state (pages refresh, ended cooldowns and
 * breakers read as ended), the 400 px layout, and the console mounted under a path, in a real
 * headless Chromium. Screenshots go to {@code target/screenshots/}.
 */
@BrowserTest
class BrowserPagesTest extends ConsoleInBrowser {

    private MountedServer mounted;

    @AfterEach
    void closeMounted() throws Exception {
        if (mounted != null) {
            mounted.close();
        }
    }

    private void start(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).start();
        console = ReplayConsole.start(layover, Fixtures.options());
    }

    @SuppressWarnings("unchecked")
    private JobType<Fixtures.Work> work() {
        return (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
    }

    @Test
    void theHistoryAnswersDidJobXRunWhenHowLongAndWhichEndpointAnswered(TestDatabase db) throws IOException {
        start(db);
        layover.enqueue(work(), new Fixtures.Work("x", 1), EnqueueOptions.key("order-17"));
        Await.equal(Fixtures.WAIT, "order-17 finished", 1L,
                () -> db.count("select count(*) from layover.job_history where job_id = 'order-17'"));
        Instant t = Instant.now().minusSeconds(30);
        ConsolePagesApiTest.history(db, "work", "order-9", "completed", "openai:gpt-4o", t, """
                [{"at": "2025-04-01T10:04:59Z", "attempt": 1, "key": "openai:gpt-4o", "result": "rate_limited",
                  "detail": "429 <b>slow down</b>", "wait_ms": 1200},
                 {"at": "2025-04-01T10:05:00Z", "attempt": 1, "key": "azure:gpt-4o", "result": "answered"}]""");
        ConsolePagesApiTest.history(db, "work", "order-8", "parked", "openai:gpt-4o", t.minusSeconds(5),
                null);

        browser = new Browser(1400, 1000);
        browser.driver.get(console.loginUrl() + "#/history");
        browser.visible("#history");
        browser.waiting().until(d -> d.findElements(By.cssSelector("#history tbody tr[data-job]")).size() == 3);
        String all = browser.driver.findElement(By.id("history")).getText();
        assertTrue(all.contains("azure:gpt-4o") && all.contains("parked") && all.contains("order-17"), all);
        browser.screenshot("history.png");

        browser.driver.findElement(By.id("h-q")).sendKeys("order-9");
        browser.driver.findElement(By.id("history-apply")).click();
        browser.waiting().until(d -> d.findElements(By.cssSelector("#history tbody tr[data-job]")).size() == 1);
        browser.driver.findElement(By.cssSelector("#history a.job-link")).click();
        browser.visible("#runs");
        String runs = browser.driver.findElement(By.id("runs")).getText();
        assertTrue(runs.contains("completed") && runs.contains("azure:gpt-4o") && runs.contains("1.23 s"), runs);
        String trail = browser.driver.findElement(By.id("trail")).getText();
        assertTrue(trail.contains("429 <b>slow down</b>"), "markup shown as text: " + trail);
        assertEquals(0L, browser.js("return document.querySelectorAll('main b').length"));
        browser.screenshot("job-runs.png");
    }

    @Test
    void aProviderKeysPageShowsItsStateJobsDeadLettersAndPoolAndItsBreakerCanBeForcedFromThere(TestDatabase db)
            throws IOException {
        start(db);
        layover.enqueue(work(), new Fixtures.Work("a", 1), EnqueueOptions.after(Duration.ofHours(1)));
        Fixtures.deadLetter("p1").error("ProviderTransientFailure", "503 Service Unavailable").insert(db);
        db.update("INSERT INTO layover.buckets (provider_key, requests_per_minute, burst_ms, request_tat, learned_until) "
                + "VALUES ('test:provider', 500, 1000, now() + interval '700 milliseconds', now() + interval '10 minutes')");
        db.update("INSERT INTO layover.cooldowns (provider_key, until, reason, started_at, updated_at) VALUES "
                + "('test#team-a', now() + interval '1 hour', 'quota_exhausted', now(), now())");
        db.update("INSERT INTO layover.breakers (provider_key) VALUES ('test#team-b')");

        browser = new Browser(1400, 1000);
        browser.driver.get(console.loginUrl().toString());
        browser.visible("#provider-keys a.key-link");
        browser.driver.findElement(By.cssSelector("#provider-keys tr[data-key='test:provider'] a.key-link")).click();
        browser.visible("#key-jobs");
        assertTrue(browser.driver.findElement(By.id("key-bucket")).getText().contains("500 req/min"));
        assertTrue(browser.driver.findElement(By.id("key-whys")).getText().contains("new 1"),
                browser.driver.findElement(By.id("key-whys")).getText());
        assertTrue(browser.driver.findElement(By.id("key-dead-letters")).getText().contains("503 Service Unavailable"));
        String pool = browser.driver.findElement(By.id("pool-members")).getText();
        assertTrue(pool.contains("test#team-a") && pool.contains("test#team-b") && pool.contains("quota_exhausted"), pool);
        browser.screenshot("provider-key.png");

        browser.driver.findElement(By.id("key-force-open")).click();
        browser.visible("#breaker-reason").sendKeys("maintenance");
        browser.driver.findElement(By.id("modal-confirm")).click();
        browser.waitForText("#flash", "forced open");
        browser.waitForText("#key-breaker", "open");
        assertEquals("open", db.value("select state from layover.breakers where provider_key = 'test:provider'"));
    }

    @Test
    void pagesRefreshByThemselvesAndAnEndedCooldownOrBreakerReadsAsEnded(TestDatabase db) throws IOException {
        start(db);
        // The cooldown is seen live first and only then made to end soon: on a loaded machine the
        // browser's start and the page's first load have taken longer than a cooldown of 6 s.
        browser = new Browser(1400, 1000);
        layover.providerStates().forceOpen("lapsing:breaker", Duration.ofSeconds(6), "short incident");
        db.update("INSERT INTO layover.cooldowns (provider_key, until, reason, started_at, updated_at) VALUES "
                + "('lapsing:cooldown', now() + interval '1 hour', 'rate_limited', now(), now())");
        browser.driver.get(console.loginUrl().toString());
        browser.visible("#provider-keys");
        WebElement cooldown = browser.driver.findElement(By.cssSelector("tr[data-key='lapsing:cooldown']"));
        assertTrue(cooldown.getText().contains("cooling down until"), cooldown.getText());
        // ends in 10 s: the page's next refresh (every 5 s) reads the new end while the cooldown is live,
        // and the page's own second tick then reads it as ended, without another load
        db.update("UPDATE layover.cooldowns SET until = now() + interval '10 seconds' WHERE provider_key = 'lapsing:cooldown'");
        browser.waitForText("tr[data-key='lapsing:cooldown']", "cooldown ended");
        browser.waitForText("tr[data-key='lapsing:breaker']", "half-open due");
        assertFalse(browser.driver.findElement(By.cssSelector("tr[data-key='lapsing:breaker']")).getText().contains("until"));
        browser.screenshot("overview-ended-states.png");

        layover.enqueue(work(), new Fixtures.Work("soon", 1), EnqueueOptions.key("soon").withDelay(Duration.ofSeconds(50)));
        browser.driver.get(console.url() + "#/jobs");
        browser.visible("#jobs tr[data-job='soon'] small.rel");
        String first = browser.driver.findElement(By.cssSelector("#jobs tr[data-job='soon'] small.rel")).getText();
        assertTrue(first.matches("\\(in \\d+ s\\)"), first);
        browser.waiting().until(d -> !d.findElement(By.cssSelector("#jobs tr[data-job='soon'] small.rel")).getText()
                .equals(first));
        layover.enqueue(work(), new Fixtures.Work("late", 1), EnqueueOptions.key("arrived-later").withDelay(Duration.ofHours(1)));
        browser.waiting().until(d -> d.findElements(By.cssSelector("#jobs tr[data-job='arrived-later']")).size() == 1);
    }

    @Test
    void at400PixelsTheNavigationCollapsesTablesScrollInTheirBoxAndForceButtonsAreReachable(TestDatabase db)
            throws IOException {
        start(db);
        layover.providerStates().forceOpen("openai:gpt-4o-mini", Duration.ofMinutes(10), "incident");
        db.update("INSERT INTO layover.breakers (provider_key) VALUES ('anthropic:claude-sonnet-4-with-a-long-name')");
        Fixtures.deadLetter("narrow").error("ProviderTransientFailure", "503 Service Unavailable: " + "upstream ".repeat(40))
                .insert(db);

        browser = new Browser(400, 800);
        browser.driver.get(console.loginUrl() + "#/breakers");
        browser.visible("#breakers");
        assertTrue(browser.driver.findElement(By.id("menu-toggle")).isDisplayed(), "a Menu button");
        assertFalse(browser.driver.findElement(By.cssSelector("#nav a[data-page=audit]")).isDisplayed(), "the nav is folded");
        long pageWidth = (Long) browser.js("return document.documentElement.scrollWidth");
        long viewport = (Long) browser.js("return document.documentElement.clientWidth");
        assertTrue(pageWidth <= viewport, "the page itself does not scroll sideways: " + pageWidth + " > " + viewport);
        assertTrue((Boolean) browser.js("const w = document.querySelector('#breakers').parentElement;"
                + " return w.scrollWidth > w.clientWidth && getComputedStyle(w).overflowX === 'auto'"),
                "the table scrolls inside its box");
        WebElement force = browser.driver.findElement(By.cssSelector("#breakers tr[data-key='anthropic:claude-sonnet-4-with-a-long-name'] button.danger"));
        assertTrue(force.isDisplayed(), "the force buttons stay in view (sticky column)");
        assertTrue((Boolean) browser.js("const r = arguments[0].getBoundingClientRect();"
                + " return r.left >= 0 && r.right <= document.documentElement.clientWidth;", force),
                "the force button is inside the screen without scrolling");
        browser.screenshot("narrow-breakers.png");
        force.click();
        browser.visible("#modal-confirm");
        browser.screenshot("narrow-force-open.png");
        browser.driver.findElement(By.id("modal-confirm")).click();
        browser.waitForText("#flash", "forced open");
        assertEquals("open", db.value("select state from layover.breakers where provider_key = 'anthropic:claude-sonnet-4-with-a-long-name'"));

        browser.driver.findElement(By.id("menu-toggle")).click();
        browser.visible("#nav a[data-page=dead-letters]").click();
        browser.visible("#dead-letters");
        WebElement row = browser.waiting().until(d -> d.findElement(By.cssSelector("#dead-letters tbody tr[data-id]")));
        assertTrue(row.getSize().getHeight() < 90, "a dense row, the long error folded: " + row.getSize().getHeight() + " px");
        assertFalse(browser.driver.findElement(By.cssSelector("#nav a[data-page=audit]")).isDisplayed(), "the nav folds again");
        browser.screenshot("narrow-dead-letters.png");
        int folded = row.getSize().getHeight();
        row.findElement(By.cssSelector(".fold")).click();
        browser.waiting().until(d -> d.findElement(By.cssSelector("#dead-letters tbody tr[data-id]")).getSize().getHeight()
                > folded + 40);
        browser.screenshot("narrow-dead-letter-unfolded.png");
        browser.driver.get(console.url() + "#/overview");
        browser.visible("#provider-keys");
        browser.screenshot("narrow-overview.png");
    }

    @Test
    void mountedUnderAPathTheConsoleWorksInTheBrowser(TestDatabase db) throws Exception {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        mounted = new MountedServer(ConsoleServlet.create(layover, Fixtures.options()), false);
        long id = Fixtures.deadLetter("mounted-1").insert(db);
        browser = new Browser(1400, 1000);
        browser.driver.get(mounted.url() + "?token=" + Fixtures.TOKEN + "#/dead-letters");
        browser.waiting().until(d -> d.findElements(By.cssSelector("#dead-letters tbody tr[data-id]")).size() == 1);
        assertTrue(browser.driver.getCurrentUrl().startsWith(mounted.url().toString()), browser.driver.getCurrentUrl());
        browser.driver.findElement(By.cssSelector("a.dl-link")).click();
        browser.visible("#discard").click();
        browser.visible("#modal-confirm").click();
        browser.waitForText("#flash", "Discarded dead letter #" + id);
        assertEquals("discarded", db.value("select state from layover.dead_letters where id = ?", id));
        browser.screenshot("mounted-dead-letter.png");
    }
}
