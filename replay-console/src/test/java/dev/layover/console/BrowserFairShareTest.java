package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.BrowserTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;

/**
 * A provider key's Fair share section (issue 19) in a real headless Chromium: its fairness keys
 * with their backlog and share, a weight set through the form and reverted, both audited; and its
 * limits at run time set from the key page, shown, and reverted.
 * Screenshots go to {@code target/screenshots/}.
 */
@BrowserTest
class BrowserFairShareTest extends ConsoleInBrowser {

    /** The share the page shows for a fairness key; null when not shown, or when the table was redrawn while read. */
    private String shareOf(String fairnessKey) {
        try {
            for (WebElement tr : browser.driver.findElements(By.cssSelector("#fair-keys-table tbody tr[data-fairness-key]"))) {
                if (fairnessKey.equals(tr.getAttribute("data-fairness-key"))) {
                    return tr.findElement(By.cssSelector("td.fair-share")).getText();
                }
            }
        } catch (StaleElementReferenceException redrawn) {
            return null; // the page redrew the table (after a set, or its refresh) between the find and the read: ask again
        }
        return null;
    }

    @Test
    void aKeysPageShowsItsTenantsSharesAndAWeightIsSetAndRevertedFromIt(TestDatabase db) throws IOException {
        layover = Fixtures.layover(db, Fixtures.work()).build(); // not started: nothing picks the jobs
        console = ReplayConsole.start(db.dataSource(), Fixtures.options());
        ConsoleFairnessTest.jobs(db, "openai:gpt-4o", "tenant:acme", 40, true);
        ConsoleFairnessTest.jobs(db, "openai:gpt-4o", "tenant:globex", 12, true);
        ConsoleFairnessTest.jobs(db, "openai:gpt-4o", "tenant:<b>initech</b>", 5, true);
        ConsoleFairnessTest.jobs(db, "other:key", "tenant:elsewhere", 3, true);

        browser = new Browser(1400, 1000);
        browser.driver.get(console.loginUrl() + "#/provider-keys/openai%3Agpt-4o");
        browser.visible("#key-fair-share");
        browser.waiting().until(d -> d.findElements(By.cssSelector("#fair-keys-table tbody tr[data-fairness-key]")).size() == 3);
        List<String> order = browser.driver.findElements(By.cssSelector("#fair-keys-table tbody tr[data-fairness-key]"))
                .stream().map(tr -> tr.getAttribute("data-fairness-key")).toList();
        assertEquals(List.of("tenant:acme", "tenant:globex", "tenant:<b>initech</b>"), order, "most waiting first");
        String section = browser.driver.findElement(By.id("key-fair-share")).getText();
        assertTrue(section.contains("3 fairness keys") && section.contains("waiting 57"), section);
        assertTrue(section.contains("tenant:<b>initech</b>"), "markup shown as text: " + section);
        assertEquals(0L, browser.js("return document.querySelectorAll('main b').length"));
        browser.waiting().until(d -> "33.3 %".equals(shareOf("tenant:acme")));
        assertTrue(!section.contains("tenant:elsewhere"), "another key's tenants are not listed");

        WebElement operator = browser.driver.findElement(By.id("operator"));
        operator.clear();
        operator.sendKeys("dana");
        browser.driver.findElement(By.id("fair-pattern")).sendKeys("tenant:acme");
        browser.driver.findElement(By.id("fair-weight")).sendKeys("2");
        browser.driver.findElement(By.id("fair-reason")).sendKeys("enterprise plan");
        browser.driver.findElement(By.id("fair-set")).click();
        browser.waitForText("#flash", "Weight of tenant:acme set to 2");
        browser.waiting().until(d -> "50.0 %".equals(shareOf("tenant:acme")));
        browser.waiting().until(d -> "25.0 %".equals(shareOf("tenant:globex")));
        browser.visible("#fair-weights tr[data-pattern='tenant:acme'] button.fair-revert");
        assertEquals(2.0, ((Number) db.value("select layover.fairness_weight('tenant:acme')")).doubleValue());
        assertEquals("dana", db.value("select actor from layover.audit_log where action = 'set_fairness_weight'"));
        browser.screenshot("fair-share.png");

        // a weight the database refuses is answered under the form, naming the problem
        browser.driver.findElement(By.id("fair-pattern")).sendKeys("tenant:globex");
        browser.driver.findElement(By.id("fair-weight")).sendKeys("0");
        browser.driver.findElement(By.id("fair-set")).click();
        browser.waitForText("#fair-error", "weight must be above 0");

        browser.driver.findElement(By.cssSelector("#fair-weights tr[data-pattern='tenant:acme'] button.fair-revert")).click();
        browser.visible("#fair-revert-reason").sendKeys("plan ended");
        browser.screenshot("fair-share-revert.png");
        browser.driver.findElement(By.id("modal-confirm")).click();
        browser.waitForText("#flash", "reverted: 1 now");
        browser.waiting().until(d -> "33.3 %".equals(shareOf("tenant:acme")));
        assertEquals(0, browser.driver.findElements(By.cssSelector("#fair-weights tr[data-pattern='tenant:acme']")).size());
        assertEquals(0, db.count("select count(*) from layover.fairness_weights"));
        assertEquals("plan ended", db.value("select note from layover.audit_log where action = 'revert_fairness_weight'"));
    }

    @Test
    void aKeysLimitIsSetFromItsPageShownAndReverted(TestDatabase db) throws IOException {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(db.dataSource(), Fixtures.options());
        browser = new Browser(1400, 1000);
        browser.driver.get(console.loginUrl() + "#/provider-keys/openai%3Agpt-4o");
        browser.waitForText("#key-limit-override", "No operator's limit");
        WebElement operator = browser.driver.findElement(By.id("operator"));
        operator.clear();
        operator.sendKeys("dana");
        browser.driver.findElement(By.id("limit-requestsPerMinute")).sendKeys("600");
        browser.driver.findElement(By.id("limit-maxInFlight")).sendKeys("4");
        browser.driver.findElement(By.id("limit-reason")).sendKeys("tier lowered");
        browser.driver.findElement(By.id("limit-set")).click();
        browser.waitForText("#modal-title", "Set the limits of openai:gpt-4o?");
        assertEquals(0, db.count("select count(*) from layover.limit_overrides"), "nothing before the confirmation");
        browser.driver.findElement(By.id("modal-confirm")).click();
        browser.waitForText("#flash", "Limits of openai:gpt-4o set: 600 req/min · 4 in flight");
        browser.waitForText("#limit-override", "600 req/min · 4 in flight");
        String card = browser.driver.findElement(By.id("key-limit-override")).getText();
        assertTrue(card.contains("by dana: tier lowered") && card.contains("as configured"), card);
        assertEquals(600.0, ((Number) db.value("select requests_per_minute from layover.limit_overrides")).doubleValue());
        assertEquals("dana", db.value("select actor from layover.audit_log where action = 'set_limit'"));
        browser.screenshot("limit-override.png");

        browser.driver.findElement(By.id("key-limit-revert")).click();
        browser.visible("#limit-revert-reason").sendKeys("tier back");
        browser.driver.findElement(By.id("modal-confirm")).click();
        browser.waitForText("#flash", "Limits of openai:gpt-4o reverted");
        browser.visible("#limit-none");
        assertEquals(0, db.count("select count(*) from layover.limit_overrides"));
        assertEquals("tier back", db.value("select note from layover.audit_log where action = 'revert_limit'"));
    }

    @Test
    void aKeyWithoutFairnessKeysHasNoFairShareSection(TestDatabase db) throws IOException {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(db.dataSource(), Fixtures.options());
        db.update("INSERT INTO layover.fairness_weights (pattern, weight) VALUES ('tenant:*', 2)");
        ConsoleFairnessTest.jobs(db, "other:key", "tenant:elsewhere", 3, true);
        browser = new Browser(1400, 1000);
        browser.driver.get(console.loginUrl() + "#/provider-keys/plain%3Akey");
        browser.visible("#key-breaker");
        assertEquals(0, browser.driver.findElements(By.id("key-fair-share")).size());
    }
}
