package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.StepOptions;
import dev.layover.core.provider.Provider;
import dev.layover.testing.Await;
import dev.layover.testing.BrowserTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

/**
 * A job's steps (docs/steps.md) on the console's job page and dead-letter page, in a real headless
 * Chromium at 1280 px: the stored steps (step, kind, provider key, outcome, attempt, finished,
 * duration, tokens) and the step the run stopped at with its error, for a job waiting for its
 * retry and for a parked one. Screenshots go to {@code target/screenshots/}.
 */
@BrowserTest
class BrowserStepsTest extends ConsoleInBrowser {

    /** An OpenAI answer's usage: 12 tokens in, 34 out. */
    private static final String USAGE = "{\"usage\": {\"prompt_tokens\": 12, \"completion_tokens\": 34, \"total_tokens\": 46}}";

    /** Two steps finish (the first on its own provider key, reporting tokens), the third throws: retried in an hour, or parked at once. */
    private static JobType<Fixtures.Work> drafting(String name, int maxAttempts) {
        return JobType.builder(name, Fixtures.Work.class)
                .providerKey("test:provider")
                .policy(JobPolicy.defaults().withMaxAttempts(maxAttempts).withBackoff(Duration.ofHours(1), Duration.ofHours(1)))
                .handler((args, ctx) -> {
                    ctx.step(StepOptions.named("outline").providerKey("test:provider"), String.class, () -> {
                        ctx.reportUsage(Provider.OPENAI, USAGE);
                        return "outline";
                    });
                    ctx.step("draft", String.class, () -> "draft");
                    ctx.step("review", String.class, () -> {
                        throw new IllegalStateException("the reviewer is busy");
                    });
                    return null;
                })
                .build();
    }

    @Test
    void theJobAndDeadLetterPagesShowTheStepsAndTheStepARunStoppedAt(TestDatabase db) throws IOException {
        JobType<Fixtures.Work> waiting = drafting("drafting", 5);
        JobType<Fixtures.Work> parking = drafting("parking", 1);
        layover = Fixtures.layover(db, waiting, parking).start();
        console = ReplayConsole.start(layover, Fixtures.options());
        String waitingId = layover.enqueue(waiting, new Fixtures.Work("w", 1)).id();
        String parkedId = layover.enqueue(parking, new Fixtures.Work("p", 1)).id();
        Await.equal(Fixtures.WAIT, "the job waits for its retry", 1L, () -> db.count(
                "select count(*) from layover.jobs where id = ? and attempts = 1 and state <> 'running'", waitingId));
        Await.equal(Fixtures.WAIT, "the other job parked", 1L, () -> db.count(
                "select count(*) from layover.dead_letters where job_id = ?", parkedId));
        long deadLetter = (Long) db.value("select id from layover.dead_letters where job_id = ?", parkedId);

        browser = new Browser(1280, 1000);
        browser.driver.get(console.loginUrl() + "#/job/drafting/" + waitingId);
        assertSteps("job-waiting.png");

        browser.driver.get(console.loginUrl() + "#/job/parking/" + parkedId);
        browser.driver.navigate().refresh();
        assertSteps("job-parked.png");

        browser.driver.get(console.loginUrl() + "#/dead-letters/" + deadLetter);
        browser.driver.navigate().refresh();
        assertSteps("dead-letter-steps.png");
    }

    /** The page shows both finished steps, in order, with their columns, and where the run stopped. */
    private void assertSteps(String screenshot) throws IOException {
        browser.visible("#steps");
        browser.waiting().until(d -> d.findElements(By.cssSelector("#steps tbody tr[data-step]")).size() == 2);
        List<WebElement> rows = browser.driver.findElements(By.cssSelector("#steps tbody tr[data-step]"));
        assertEquals("outline", rows.get(0).getAttribute("data-step"));
        assertEquals("draft", rows.get(1).getAttribute("data-step"));
        String outline = rows.get(0).getText();
        assertTrue(outline.contains("outline") && outline.contains("call") && outline.contains("test:provider")
                && outline.contains("finished") && outline.contains("12 / 34") && outline.contains(" ms"), outline);
        List<WebElement> cells = rows.get(0).findElements(By.tagName("td"));
        assertEquals(8, cells.size(), outline);
        assertEquals("1", cells.get(4).getText(), "the attempt that finished it: " + outline);
        assertTrue(!cells.get(5).getText().isBlank() && !cells.get(5).getText().equals("–"), "finished: " + outline);
        List<WebElement> draft = rows.get(1).findElements(By.tagName("td"));
        assertEquals("–", draft.get(2).getText(), "no key of its own: " + rows.get(1).getText());
        assertEquals("–", draft.get(7).getText(), "no tokens reported: " + rows.get(1).getText());
        String stopped = browser.driver.findElement(By.id("stopped-at")).getText();
        assertTrue(stopped.startsWith("Stopped at step review: ") && stopped.contains("the reviewer is busy"), stopped);
        assertEquals(Boolean.TRUE, browser.js("return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
                + " && document.querySelector('#steps').closest('.table-wrap, .card').scrollWidth"
                + " <= document.querySelector('#steps').closest('.table-wrap, .card').clientWidth + 1"),
                "the steps fit 1280 px: " + screenshot);
        browser.screenshot(screenshot);
    }
}
