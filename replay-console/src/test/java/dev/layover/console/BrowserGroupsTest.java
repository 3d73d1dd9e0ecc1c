package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.Enqueued;
import dev.layover.core.GroupOptions;
import dev.layover.core.JobRef;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.BrowserTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;

/**
 * The Groups page, a group's page and a job's group and dependencies, in a real headless Chromium
 * at 1280 px against groups and dependencies a running Layover made: a group held open by a parked
 * member, a settled one, a group of groups, a job waiting on a parked job and one whose edge
 * completed. Screenshots go to {@code target/screenshots/}.
 */
@BrowserTest
class BrowserGroupsTest extends ConsoleInBrowser {

    record Assemble(String doc) {}

    @Test
    void theGroupsPagesAndAJobsDependenciesShowWhatTheDatabaseHolds(TestDatabase db) throws IOException {
        JobType<Fixtures.Work> work = Fixtures.work((w, ctx) -> w.name().startsWith("bad")
                ? Outcome.rejected("segment " + w.name() + " cannot be translated") : Outcome.done(w.n() * 10));
        JobType<Assemble> assemble = JobType.builder("assemble", Assemble.class).handler((a, ctx) -> Outcome.done()).build();
        layover = Fixtures.layover(db, work, assemble).build(); // started once everything is enqueued
        layover.enqueueGroup(null, GroupOptions.callback(assemble, new Assemble("held")).withKey("doc-held"), work,
                List.of(new Fixtures.Work("a", 1), new Fixtures.Work("b", 2), new Fixtures.Work("bad", 3)),
                w -> EnqueueOptions.key("held-" + w.name()));
        layover.enqueueGroup(null, GroupOptions.callback(assemble, new Assemble("done")).withKey("doc-done"), work,
                List.of(new Fixtures.Work("c", 4), new Fixtures.Work("d", 5)), w -> EnqueueOptions.key("done-" + w.name()));
        layover.enqueueGroup(null, GroupOptions.callback(assemble, new Assemble("all")).withKey("all-docs").open(), work,
                List.of(), w -> EnqueueOptions.now());
        layover.enqueueGroup(null, GroupOptions.callback(assemble, new Assemble("part")).withKey("part-1").inGroup("all-docs"),
                work, List.of(new Fixtures.Work("e", 6)), w -> EnqueueOptions.key("part-" + w.name()));
        layover.enqueue(work, new Fixtures.Work("waits", 7),
                EnqueueOptions.key("after-bad").withAfter(new JobRef("work", "held-bad")));
        Enqueued ran = layover.enqueue(work, new Fixtures.Work("ran", 8), EnqueueOptions.key("after-a")
                .withAfter(new JobRef("work", "held-a"), new JobRef("work", "done-c")));
        layover.start();
        Await.equal(Fixtures.WAIT, "the member parked, the other groups settled", List.of("parked", "finished"),
                () -> List.of(db.value("select after_state from layover.waiting_dependents where job_id = 'after-bad'"),
                        db.value("select callback_state from layover.job_groups where group_id = 'doc-done'")));
        Await.equal(Fixtures.WAIT, "after-a completed", 1L, () -> db.count(
                "select count(*) from layover.job_history where job_id = 'after-a' and outcome = 'completed'"));
        Await.equal(Fixtures.WAIT, "the child group's callback, a member of its parent", "done", () -> db.value(
                "select state from layover.group_members where job_id = 'part-1'"));

        browser = new Browser(1280, 900);
        browser.driver.get(console().loginUrl() + "#/groups");
        browser.visible("#groups tbody tr[data-group]");
        assertEquals(4, browser.driver.findElements(By.cssSelector("#groups tbody tr[data-group]")).size());
        String held = row("#groups tr[data-group='doc-held']");
        assertTrue(held.contains("waiting") && held.contains("on_complete"), held);
        assertEquals("1", text("#groups tr[data-group='doc-held'] .g-parked"));
        assertEquals("2", text("#groups tr[data-group='doc-held'] .g-done"));
        assertTrue(row("#groups tr[data-group='doc-done']").contains("finished"), row("#groups tr[data-group='doc-done']"));
        assertTrue(row("#groups tr[data-group='all-docs']").contains("not sealed"));
        assertEquals(List.of(), fits(), "the Groups page fits 1280 px");
        browser.screenshot("groups.png");

        // open ones only: a settled group is not listed
        browser.driver.findElement(By.cssSelector("#group-filters a[data-state='open']")).click();
        browser.waiting().until(d -> d.findElements(By.cssSelector("#groups tr[data-group='doc-done']")).isEmpty());
        assertEquals(2, browser.driver.findElements(By.cssSelector("#groups tbody tr[data-group]")).size(),
                "doc-held and all-docs");

        // a group's page: its members by state, linked to their jobs, its callback
        browser.driver.findElement(By.cssSelector("#groups tr[data-group='doc-held'] a.group-link")).click();
        browser.visible("#group-members");
        assertEquals(3, browser.driver.findElements(By.cssSelector("#group-members tr[data-member]")).size());
        assertTrue(row("#group-members tr[data-member='held-bad']").contains("parked"));
        assertTrue(row("#group-members tr[data-member='held-a']").contains("done"));
        assertTrue(text("#group-counts").contains("1 parked") && text("#group-counts").contains("2 done"), text("#group-counts"));
        assertTrue(text("#group-callback").contains("waiting"), text("#group-callback"));
        assertEquals(List.of(), fits(), "the group's page fits 1280 px");
        browser.screenshot("group.png");

        // the parked member's page: its group, and the job waiting for it, visible as waiting on a parked job
        browser.driver.findElement(By.cssSelector("#group-members tr[data-member='held-bad'] a.job-link")).click();
        browser.visible("#job-groups");
        assertTrue(text("#job-groups").contains("A member of group") && text("#job-groups").contains("parked"),
                text("#job-groups"));
        assertTrue(row("#job-dependents tr[data-edge='work/after-bad']").contains("on a parked job"),
                text("#job-dependents"));
        browser.screenshot("job-dependents.png");
        browser.driver.findElement(By.cssSelector("#job-dependents a.job-link")).click();
        browser.visible("#job-dependencies");
        assertTrue(row("#job-dependencies tr[data-edge='work/held-bad']").contains("waiting"), text("#job-dependencies"));

        // a job whose edges completed
        goTo("#/job/work/" + ran.id());
        assertEquals(2, browser.driver.findElements(By.cssSelector("#job-dependencies tr[data-edge]")).size());
        assertTrue(text("#job-dependencies").contains("completed"), text("#job-dependencies"));
        assertEquals(List.of(), fits(), "the job's page fits 1280 px");

        // groups of groups: the parent lists its child, the child names its parent
        goTo("#/groups/all-docs");
        assertTrue(text("#group-children").contains("part-1"), text("#group-children"));
        browser.driver.findElement(By.cssSelector("#group-children a.group-link")).click();
        browser.visible("#group-parent");
        assertTrue(text("#group-parent").contains("all-docs"), text("#group-parent"));
        browser.screenshot("group-of-groups.png");
    }

    private ReplayConsole console() {
        if (console == null) {
            console = ReplayConsole.start(layover, Fixtures.options());
        }
        return console;
    }

    /** Opens a page of the console and waits until it shows it. */
    private void goTo(String hash) {
        browser.driver.get(console.url() + hash);
        browser.waiting().until(d -> hash.equals(browser.js("return document.getElementById('main')"
                + ".getAttribute('data-rendered')")));
    }

    private String text(String css) {
        return browser.driver.findElement(By.cssSelector(css)).getText();
    }

    private String row(String css) {
        browser.visible(css);
        return text(css);
    }

    @SuppressWarnings("unchecked")
    private List<String> fits() {
        browser.waiting().until(d -> location().equals(browser.js("return document.getElementById('main')"
                + ".getAttribute('data-rendered')")));
        return (List<String>) browser.js(BrowserAtAGlanceTest.CLIPPED, false);
    }

    private Object location() {
        return browser.js("return location.hash");
    }
}
