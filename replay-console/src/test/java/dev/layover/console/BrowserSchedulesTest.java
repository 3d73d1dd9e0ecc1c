package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.schedule.Schedule;
import dev.layover.testing.BrowserTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.time.Duration;
import java.time.ZoneId;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;

/**
 * The Schedules page in a real headless Chromium: a schedule listed with its timing and next
 * occurrence, paused and run now from the page (each audited), args rendered as text.
 */
@BrowserTest
class BrowserSchedulesTest extends ConsoleInBrowser {

    @Test
    void aScheduleIsPausedAndRunNowFromTheSchedulesPage(TestDatabase db) throws IOException {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        @SuppressWarnings("unchecked")
        JobType<Fixtures.Work> work = (JobType<Fixtures.Work>) layover.jobType("work").orElseThrow();
        layover.schedules().create("acme", Schedule.cron("nightly", work, "30 2 * * *", ZoneId.of("Europe/Berlin"),
                new Fixtures.Work("<b>bold</b>", 1)));
        layover.schedules().create("", Schedule.every("pulse", work, Duration.ofHours(1), new Fixtures.Work("p", 2)));
        console = ReplayConsole.start(layover, Fixtures.options());

        browser = new Browser(1400, 1000);
        browser.driver.get(console.loginUrl().toString());
        browser.visible("#nav a[data-page='schedules']").click();
        browser.visible("#schedules tr[data-schedule='acme/nightly']");
        String row = browser.driver.findElement(By.cssSelector("#schedules tr[data-schedule='acme/nightly']")).getText();
        assertTrue(row.contains("30 2 * * * (Europe/Berlin)") && row.contains("tenant acme"), row);
        assertEquals(0, browser.driver.findElements(By.cssSelector("#schedules b")).size(), "nothing rendered as HTML");
        browser.screenshot("schedules.png");

        browser.driver.findElement(By.cssSelector("#schedules tr[data-schedule='acme/nightly'] button[data-action='pause']"))
                .click();
        browser.visible("#schedule-reason").sendKeys("vendor outage");
        browser.driver.findElement(By.id("modal-confirm")).click();
        browser.waitForText("#flash", "Paused acme/nightly");
        browser.waitForText("#schedules tr[data-schedule='acme/nightly']", "paused");
        assertEquals(Boolean.TRUE, db.value("select paused from layover.schedules where name = 'nightly'"));

        browser.driver.findElement(By.cssSelector("#schedules tr[data-schedule='/pulse'] button[data-action='trigger']"))
                .click();
        browser.visible("#modal-confirm").click();
        browser.waitForText("#flash", "Enqueued sched:/pulse@manual-");
        assertEquals(1, db.count("select count(*) from layover.jobs where id like 'sched:/pulse@manual-%'"));
        assertEquals(2, db.count("select count(*) from layover.audit_log where action in ('schedule_pause', "
                + "'schedule_trigger')"));
    }
}
