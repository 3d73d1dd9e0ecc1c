package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.BrowserTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

/**
 * The Batches pages (issue 24) in a real headless Chromium, over batches a real Layover gathered
 * and sent to the fake provider's OpenAI batch endpoints: the list with its counts and saving, a
 * waiting job's page linking to its batch, the batch's page with its lines once they are answered,
 * a filter, and stored text shown as text. Screenshots go to {@code target/screenshots/}.
 */
@BrowserTest
class BrowserBatchesTest extends ConsoleInBrowser {

    private FakeProvider fake;

    @AfterEach
    void closeFake() throws Exception {
        if (fake != null) {
            fake.close();
        }
    }

    private String cell(String batchId, String css) {
        return browser.driver.findElement(By.cssSelector("#batches tr[data-batch='" + batchId + "'] " + css)).getText();
    }

    @Test
    void theBatchesPageListsTheEnginesBatchesAndABatchAndItsJobsLinkToEachOther(TestDatabase db) throws IOException {
        fake = FakeProvider.start();
        fake.batches().manual();
        AtomicInteger direct = new AtomicInteger();
        JobType<ConsoleBatchesTest.Doc> type = ConsoleBatchesTest.summary(direct);
        layover = ConsoleBatchesTest.batchingLayover(db, fake, type);
        for (int i = 0; i < 6; i++) {
            layover.enqueue(type, new ConsoleBatchesTest.Doc("doc-" + i, "document " + i),
                    EnqueueOptions.key("doc-" + i).withDeadline(Duration.ofHours(3)));
        }
        layover.start();
        // an older batch of another key, failed with a provider's words that contain markup
        long old = ConsoleBatchesTest.batch(db, "anthropic:claude", "failed", 2, 0, 0, 2, 0,
                "400 <b>invalid</b> batch");
        console = ReplayConsole.start(layover, Fixtures.options());
        Await.until(Fixtures.WAIT, "the batch submitted", () -> db.count(
                "select count(*) from layover.batch_status where state = 'submitted' and lines = 6") == 1);
        String id = String.valueOf(db.value(
                "select id from layover.batch_status where provider_key = 'openai:gpt-4o-mini'"));

        browser = new Browser(1400, 1000);
        browser.driver.get(console.loginUrl() + "#/overview");
        browser.visible("#nav a[data-page='batches']").click();
        browser.visible("#batches tr[data-batch='" + id + "']");
        assertEquals("submitted", cell(id, "td:nth-child(2) .badge"));
        assertEquals("6", cell(id, "td.b-pending"));
        assertTrue(browser.driver.findElement(By.id("batches-in-flight")).getText().contains("openai:gpt-4o-mini"));
        assertTrue(cell(String.valueOf(old), "td:nth-child(2)").contains("400 <b>invalid</b> batch"),
                "markup shown as text");
        assertEquals(0L, browser.js("return document.querySelectorAll('main b').length"));
        browser.screenshot("batches-submitted.png");

        // a waiting job's page names its batch and links to it
        browser.driver.get(console.loginUrl() + "#/job/summary/doc-0");
        WebElement inBatch = browser.visible("#job-batch a.batch-link");
        assertEquals("batch #" + id, inBatch.getText());
        assertTrue(browser.driver.findElement(By.id("job-batch")).getText().contains("gathered"));
        inBatch.click();
        browser.waitForText("main h1", "Batch #" + id);
        browser.waiting().until(d -> d.findElements(By.cssSelector("#batch-lines tr[data-item]")).size() == 6);

        fake.batches().completeAll();
        Await.until(Fixtures.WAIT, "every job done",
                () -> db.count("select count(*) from layover.scheduled_tasks where task_name = 'summary'") == 0);
        // the page refreshes by itself
        browser.waitForText("#batch-facts", "ended");
        browser.waiting().until(d -> d.findElements(By.cssSelector("#batch-lines .badge.ok")).size() == 6);
        String saved = browser.driver.findElement(By.id("batch-saved")).getText();
        assertEquals(String.format(java.util.Locale.US, "%,d",
                (Long) db.value("select saved_tokens from layover.batch_status where id = ?", Long.parseLong(id))), saved);
        assertTrue(!saved.equals("0"), "a saving is shown");
        assertEquals(0, direct.get());
        browser.screenshot("batch-ended.png");

        // from a line to its job, whose page still shows the batch it went by
        browser.driver.findElement(By.cssSelector("#batch-lines tr[data-item] a.job-link")).click();
        browser.visible("#job-batches tr[data-batch='" + id + "']");
        assertTrue(browser.driver.findElement(By.id("job-batches")).getText().contains("succeeded"));

        // the filter
        browser.driver.get(console.loginUrl() + "#/batches");
        browser.visible("#batches tr[data-batch='" + old + "']");
        new org.openqa.selenium.support.ui.Select(browser.driver.findElement(By.id("bf-state"))).selectByValue("ended");
        browser.driver.findElement(By.id("bf-apply")).click();
        browser.waiting().until(d -> d.findElements(By.cssSelector("#batches tr[data-batch]")).size() == 1
                && !d.findElements(By.cssSelector("#batches tr[data-batch='" + id + "']")).isEmpty());
        browser.driver.get(console.loginUrl() + "#/batches?state=cancelled");
        browser.waitForText("#batches", "No batch matches this filter.");
    }
}
