package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.BrowserTest;
import dev.layover.testing.TestDatabase;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.Keys;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console in a real headless Chromium: open with the token, filter, open a dead letter, replay
 * it and see the job run; bulk actions with their confirmation; edit errors next to the field;
 * markup in errors and args shown as text. Screenshots go to {@code target/screenshots/}.
 *
 * <p>Skipped (with a message) when Chromium or chromedriver is missing, except with {@code CI=true},
 * where it fails instead. Other locations: {@code -Dlayover.test.chromium=...},
 * {@code -Dlayover.test.chromedriver=...}.
 */
@BrowserTest
class BrowserEndToEndTest {

    private static final Path CHROMIUM = Path.of(System.getProperty("layover.test.chromium", "/usr/bin/chromium"));
    private static final Path CHROMEDRIVER = Path.of(System.getProperty("layover.test.chromedriver", "/usr/bin/chromedriver"));
    private static final Duration UI_WAIT = Duration.ofSeconds(20);
    private static final String XSS_SCRIPT = "<script>window.__xss=1</script>";
    private static final String XSS_IMG = "<img src=x onerror=\"window.__xss=2\">";

    private Layover layover;
    private ReplayConsole console;
    private ChromeDriver driver;
    private Path userDataDir;
    private final Set<String> ran = ConcurrentHashMap.newKeySet();

    @BeforeEach
    void browserIsThere() {
        List<String> missing = Stream.of(CHROMIUM, CHROMEDRIVER).filter(p -> !Files.isExecutable(p))
                .map(Path::toString).toList();
        if (missing.isEmpty()) {
            return;
        }
        String message = "the browser test needs Chromium and chromedriver (apt-get install chromium chromium-driver); "
                + "missing: " + String.join(", ", missing);
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            fail(message + " (CI=true: not skipped)");
        }
        Assumptions.abort("skipped: " + message);
    }

    @AfterEach
    void stop() throws IOException {
        if (driver != null) {
            driver.quit();
        }
        if (console != null) {
            console.close();
        }
        if (layover != null) {
            layover.stop();
        }
        if (userDataDir != null) {
            try (Stream<Path> files = Files.walk(userDataDir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private void startConsole(TestDatabase db) {
        JobType<Fixtures.Work> work = Fixtures.work((args, ctx) -> {
            ran.add(ctx.jobId());
            return null;
        });
        layover = Fixtures.layover(db, work).start();
        console = ReplayConsole.start(layover, Fixtures.options());
    }

    private ChromeDriver browser() throws IOException {
        userDataDir = Files.createTempDirectory("layover-chromium-");
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--no-first-run",
                "--user-data-dir=" + userDataDir, "--window-size=1400,1000");
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(CHROMEDRIVER.toFile())
                .usingAnyFreePort()
                .build();
        driver = new ChromeDriver(service, options);
        return driver;
    }

    private WebDriverWait waiting() {
        return new WebDriverWait(driver, UI_WAIT);
    }

    private WebElement visible(String css) {
        return waiting().until(ExpectedConditions.visibilityOfElementLocated(By.cssSelector(css)));
    }

    private void screenshot(String name) throws IOException {
        Path dir = Path.of(System.getProperty("basedir", ".")).resolve("target/screenshots");
        Files.createDirectories(dir);
        Dimension before = driver.manage().window().getSize();
        long height = (Long) js("return Math.ceil(document.documentElement.scrollHeight)");
        driver.manage().window().setSize(new Dimension(before.getWidth(), (int) Math.max(before.getHeight(), height + 120)));
        try {
            File png = driver.getScreenshotAs(OutputType.FILE);
            Files.copy(png.toPath(), dir.resolve(name), StandardCopyOption.REPLACE_EXISTING);
        } finally {
            driver.manage().window().setSize(before);
        }
    }

    private Object js(String script) {
        return ((JavascriptExecutor) driver).executeScript(script);
    }

    @Test
    void anOperatorOpensTheConsoleWithTheTokenFiltersOpensADeadLetterReplaysItAndSeesTheJobRun(TestDatabase db)
            throws IOException {
        startConsole(db);
        for (int i = 1; i <= 3; i++) {
            Fixtures.deadLetter("doc-" + i).error("dev.layover.ProviderTransientFailure", "503 Service Unavailable")
                    .insert(db);
        }
        long target = Fixtures.deadLetter("doc-42").provider("openai:gpt-4o-mini").failure("quota_exhausted")
                .error("ProviderQuotaExhausted", "429 insufficient_quota: You exceeded your current quota")
                .args("{\"name\":\"doc-42\",\"n\":3}").insert(db);
        Fixtures.deadLetter("doc-9").state("review").failure("rate_limit_exhausted").insert(db);
        layover.providerStates().forceOpen("anthropic:claude-sonnet", Duration.ofMinutes(10), "incident");
        // another key cools: a replayed job of a cooling key waits for the cooldown like any job of it
        db.update("INSERT INTO layover.cooldowns (provider_key, until, reason, detail, started_at, updated_at) "
                + "VALUES ('openai:gpt-4o', now() + interval '3 minutes', 'quota_exhausted', 'quota', now(), now())");
        db.update("INSERT INTO layover.buckets (provider_key, requests_per_minute, burst_ms, request_tat) "
                + "VALUES ('test:provider', 600, 60000, now() + interval '45 seconds')");
        @SuppressWarnings("unchecked")
        JobType<Fixtures.Work> work = (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
        for (int i = 0; i < 4; i++) {
            layover.enqueue(work, new Fixtures.Work("later-" + i, i), EnqueueOptions.after(Duration.ofHours(1)));
        }

        browser().get(console.loginUrl().toString());
        visible("#provider-keys");
        assertFalse(driver.getCurrentUrl().contains("token="), "the token left the address bar: " + driver.getCurrentUrl());
        assertTrue(driver.findElement(By.cssSelector("#provider-keys")).getText().contains("anthropic:claude-sonnet"));
        screenshot("overview.png");
        WebElement operator = driver.findElement(By.id("operator"));
        operator.sendKeys("e2e-operator", Keys.TAB);

        driver.findElement(By.cssSelector("#nav a[data-page=dead-letters]")).click();
        visible("#dead-letters");
        waiting().until(d -> d.findElements(By.cssSelector("#dead-letters tbody tr[data-id]")).size() == 5);
        driver.findElement(By.id("f-providerKey")).sendKeys("openai:gpt-4o-mini");
        driver.findElement(By.id("apply-filter")).click();
        waiting().until(d -> d.findElements(By.cssSelector("#dead-letters tbody tr[data-id]")).size() == 1);
        WebElement row = driver.findElement(By.cssSelector("#dead-letters tbody tr[data-id]"));
        assertTrue(row.getText().contains("insufficient_quota"), row.getText());
        assertEquals("1 matching", driver.findElement(By.id("matching-count")).getText());
        screenshot("dead-letters-filtered.png");

        row.findElement(By.cssSelector("a.dl-link")).click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("h1"), "Dead letter #" + target));
        assertTrue(driver.findElement(By.id("args")).getAttribute("value").contains("\"n\" : 3"));
        assertEquals(2, driver.findElements(By.cssSelector("#attempts tbody tr")).size());
        screenshot("dead-letter.png");

        driver.findElement(By.id("replay")).click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("flash"), "Replayed as job doc-42"));
        Await.until(Fixtures.WAIT, "the replayed job runs", () -> ran.contains("doc-42"));
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("live-job"), "ran and finished"));
        waiting().until(d -> d.findElements(By.cssSelector("#replays tbody tr")).size() == 1);
        assertTrue(driver.findElement(By.cssSelector("#replays")).getText().contains("e2e-operator"));
        screenshot("dead-letter-replayed.png");
        assertEquals("e2e-operator", db.value("select actor from layover.audit_log where action = 'replay'"));
        assertEquals("replayed", db.value("select state from layover.dead_letters where id = ?", target));

        driver.findElement(By.cssSelector("#nav a[data-page=jobs]")).click();
        waiting().until(d -> d.findElements(By.cssSelector("#jobs tbody tr")).size() == 4);
        assertTrue(driver.findElement(By.id("jobs")).getText().contains("new"), "why: a first run");
        screenshot("jobs-waiting.png");
        driver.findElement(By.cssSelector("#nav a[data-page=audit]")).click();
        visible("#audit");
        assertTrue(driver.findElement(By.id("audit")).getText().contains("e2e-operator"));
        screenshot("audit-log.png");
    }

    @Test
    void bulkActionsOnEverythingMatchingAFilterAskForAConfirmationThatStatesTheCount(TestDatabase db) throws IOException {
        startConsole(db);
        for (int i = 0; i < 3; i++) {
            Fixtures.deadLetter("bad-" + i).failure("rejected").error("ProviderRejected", "prompt too long").insert(db);
        }
        Fixtures.deadLetter("keep").insert(db);

        browser().get(console.loginUrl() + "#/dead-letters?failureType=rejected");
        visible("#dead-letters");
        waiting().until(d -> d.findElements(By.cssSelector("#dead-letters tbody tr[data-id]")).size() == 3);
        driver.findElement(By.id("select-all-matching")).click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("selection-text"), "All 3"));
        driver.findElement(By.id("bulk-discard")).click();
        WebElement text = visible("#confirm-text");
        assertEquals("Discard 3 dead letters matching this filter?", text.getText());
        assertEquals("Discard 3 dead letters?", driver.findElement(By.id("modal-title")).getText());
        driver.findElement(By.id("bulk-note")).sendKeys("won't fix");
        screenshot("bulk-confirmation.png");
        driver.findElement(By.id("modal-confirm")).click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("flash"), "Discarded 3"));
        assertEquals(3, db.count("select count(*) from layover.dead_letters where state = 'discarded'"));
        assertEquals("parked", db.value("select state from layover.dead_letters where job_id = 'keep'"));
        assertEquals("won't fix", db.value("select note from layover.audit_log where action = 'discard'"));
    }

    @Test
    void anEditedArgsErrorIsShownNextToTheFieldAndNothingIsReplayed(TestDatabase db) throws IOException {
        startConsole(db);
        long id = Fixtures.deadLetter("edit-1").insert(db);
        browser().get(console.loginUrl() + "#/dead-letters/" + id);
        WebElement args = visible("#args");
        args.clear();
        args.sendKeys("{\"name\": \"edit-1\", \"n\": \"three\"}");
        WebElement replay = driver.findElement(By.id("replay"));
        assertEquals("Replay with edited args", replay.getText());
        replay.click();
        WebElement error = visible("#args-error");
        waiting().until(d -> !error.getText().isEmpty());
        assertTrue(error.getText().contains("args do not read as Work"), error.getText());
        assertTrue(args.getAttribute("class").contains("invalid"));
        assertEquals(0, db.count("select count(*) from layover.jobs"));
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
    }

    @Test
    void markupInErrorsArgsAndProviderKeysIsShownAsTextAndRunsNothing(TestDatabase db) throws IOException {
        startConsole(db);
        String payload = XSS_SCRIPT + XSS_IMG;
        long id = Fixtures.deadLetter("xss-1").provider("evil:" + XSS_IMG)
                .error("<b>Boom</b>", "provider said: " + payload)
                .args("{\"name\": " + ApiClient.JSON.getNodeFactory().textNode(payload) + ", \"n\": 1}")
                .insert(db);
        db.update("update layover.dead_letters set provider_trail = jsonb_build_array(jsonb_build_object('at', "
                + "'2025-01-01T10:00:00Z', 'attempt', 1, 'key', ?::text, 'result', 'rate_limited', 'detail', ?::text, "
                + "'wait_ms', 1200)) where id = ?", "evil:" + XSS_IMG, payload, id);
        layover.providerStates().forceOpen("evil:" + XSS_IMG, Duration.ofMinutes(1), payload);

        browser().get(console.loginUrl().toString());
        visible("#provider-keys");
        assertTrue(driver.findElement(By.id("provider-keys")).getText().contains("evil:" + XSS_IMG));

        driver.get(console.url() + "#/dead-letters");
        visible("#dead-letters");
        waiting().until(d -> d.findElements(By.cssSelector("#dead-letters tbody tr[data-id]")).size() == 1);
        assertTrue(driver.findElement(By.id("dead-letters")).getText().contains(payload));

        driver.get(console.url() + "#/dead-letters/" + id);
        WebElement message = visible("#error-message");
        assertEquals("provider said: " + payload, message.getText());
        assertEquals("<b>Boom</b>", driver.findElement(By.id("error-class")).getText());
        assertTrue(driver.findElement(By.id("args")).getAttribute("value").contains(XSS_SCRIPT));
        assertTrue(driver.findElement(By.id("attempts")).getText().contains(XSS_IMG));
        String trail = driver.findElement(By.id("trail")).getText();
        assertTrue(trail.contains("evil:" + XSS_IMG) && trail.contains(payload), trail);

        driver.get(console.url() + "#/breakers");
        visible("#breakers");
        assertTrue(driver.findElement(By.id("breakers")).getText().contains(XSS_SCRIPT));
        screenshot("xss-probe-breakers.png");

        db.update("INSERT INTO layover.job_history (job_type, job_id, outcome, failure_type, detail, provider_key, "
                + "enqueued_at, finished_at, provider_trail) VALUES ('work', ?, 'parked', 'rejected', ?, ?, now(), now(), "
                + "jsonb_build_array(jsonb_build_object('attempt', 1, 'key', ?::text, 'result', 'answered')))",
                XSS_IMG, payload, "evil:" + XSS_IMG, "evil:" + XSS_IMG);
        driver.get(console.url() + "#/history");
        waiting().until(d -> d.findElements(By.cssSelector("#history tbody tr[data-job]")).size() == 1);
        assertTrue(driver.findElement(By.id("history")).getText().contains("evil:" + XSS_IMG));
        driver.findElement(By.cssSelector("#history a.job-link")).click();
        visible("#runs");
        assertTrue(driver.findElement(By.id("runs")).getText().contains(payload.substring(0, 20)));
        driver.findElement(By.cssSelector("#runs a.key-link")).click();
        visible("#key-dead-letters");
        assertTrue(driver.findElement(By.tagName("h1")).getText().contains("evil:" + XSS_IMG));
        assertTrue(driver.findElement(By.id("key-breaker")).getText().contains(XSS_SCRIPT));
        screenshot("xss-probe-provider-key.png");

        assertEquals("undefined", js("return typeof window.__xss"));
        // the key page's charts are the console's own images: same origin, its chart endpoint, the key URL-encoded
        assertEquals(4L, js("return document.querySelectorAll('main img.chart-img').length"));
        assertEquals(Boolean.TRUE, ((JavascriptExecutor) driver).executeScript(
                "return [...document.querySelectorAll('main img.chart-img')].every(i => {"
                + " const u = new URL(i.src); return u.origin === location.origin && /\\/api\\/time-series\\/[a-z]+\\.svg$/.test(u.pathname)"
                + " && u.searchParams.get('providerKey') === arguments[0]; })", "evil:" + XSS_IMG));
        assertEquals(0L, js("return document.querySelectorAll('main img:not(.chart-img), main b, #flash img').length"));
        assertEquals(1L, js("return document.scripts.length"), "only the console's own script");
    }

    @Test
    void anOperatorCancelsAWaitingJobAndPausesAndResumesAJobTypeFromTheJobsPage(TestDatabase db) throws IOException {
        startConsole(db);
        @SuppressWarnings("unchecked")
        JobType<Fixtures.Work> work = (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
        layover.enqueue(work, new Fixtures.Work("later", 1),
                EnqueueOptions.key("wait-1").withDelay(Duration.ofHours(1)));
        browser().get(console.loginUrl() + "#/jobs");
        visible("#jobs");
        waiting().until(d -> d.findElements(By.cssSelector("#jobs button[data-cancel='wait-1']")).size() == 1);
        driver.findElement(By.cssSelector("#jobs button[data-cancel='wait-1']")).click();
        visible("#cancel-reason").sendKeys("customer asked");
        screenshot("cancel-confirmation.png");
        driver.findElement(By.id("modal-confirm")).click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("flash"), "cancelled"));
        assertEquals("cancelled", db.value("select failure_type from layover.dead_letters where job_id = 'wait-1'"));
        assertEquals("customer asked", db.value("select note from layover.audit_log where action = 'cancel'"));

        waiting().until(ExpectedConditions.invisibilityOfElementLocated(By.id("modal-backdrop")));
        // the page renders again after the cancel (the job's row goes): type into the new form, not the old one
        waiting().until(d -> d.findElements(By.cssSelector("#jobs button[data-cancel='wait-1']")).isEmpty());
        waiting().ignoring(StaleElementReferenceException.class).until(d -> {
            WebElement target = d.findElement(By.id("pause-target"));
            target.clear();
            target.sendKeys("work");
            return "work".equals(target.getAttribute("value"));
        });
        driver.findElement(By.cssSelector("#pause-form button[type=submit]")).click();
        visible("#pause-reason").sendKeys("maintenance");
        driver.findElement(By.id("modal-confirm")).click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("flash"), "Paused work"));
        waiting().until(ExpectedConditions.invisibilityOfElementLocated(By.id("modal-backdrop")));
        waiting().until(d -> d.findElements(By.cssSelector("#pauses-table tr[data-pause='job_type:work']")).size() == 1);
        screenshot("jobs-paused.png");
        try {
            Thread.sleep(1200); // the worker learns of the pause
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        String held = layover.enqueue(work, new Fixtures.Work("held", 1)).id();
        Await.equal(UI_WAIT, "held", 1L,
                () -> db.count("select count(*) from layover.job_controls where id = ? and paused", held));
        assertFalse(ran.contains(held), "nothing of a paused job type starts");

        driver.findElement(By.cssSelector("#pauses-table tr[data-pause='job_type:work'] button")).click();
        visible("#modal-confirm").click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("flash"), "Resumed work"));
        Await.until(UI_WAIT, "the held job ran", () -> ran.contains(held));
        assertEquals(Fixtures.options().defaultOperator(), db.value("select resumed_by from layover.pauses"));
    }
}
