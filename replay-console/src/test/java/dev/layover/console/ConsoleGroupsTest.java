package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.EnqueuedGroup;
import dev.layover.core.GroupOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Groups through the JSON API (docs/composition.md): the list (open, settled), one group with its
 * members and relatives, and a job's groups.
 */
@DatabaseTest
class ConsoleGroupsTest {

    private Layover layover;
    private ReplayConsole console;

    @AfterEach
    void stop() {
        if (console != null) {
            console.close();
        }
    }

    @Test
    void theGroupsAndOneGroupsMembers(TestDatabase db) {
        JobType<Fixtures.Work> work = Fixtures.work();
        layover = Fixtures.layover(db, work).build(); // not started: the members wait
        EnqueuedGroup g = layover.enqueueGroup(GroupOptions.callback(work, new Fixtures.Work("report", 1)).withKey("g-1"),
                work, List.of(new Fixtures.Work("a", 1), new Fixtures.Work("b", 2)));
        console = ReplayConsole.start(layover, Fixtures.options());
        ApiClient api = new ApiClient(console);

        JsonNode list = api.get("/api/groups").json();
        assertEquals(1, list.get("items").size(), list.toString());
        JsonNode row = list.get("items").get(0);
        assertEquals("g-1", row.get("groupId").asText());
        assertEquals(2, row.get("pending").asInt());
        assertEquals("waiting", row.get("callbackState").asText());

        JsonNode one = api.get("/api/groups/g-1").json();
        assertEquals(2, one.get("group").get("size").asInt());
        assertEquals(2, one.get("members").size());
        assertEquals(g.members().get(0).id(), one.get("members").get(0).get("jobId").asText());
        assertEquals("pending", one.get("members").get(0).get("state").asText());

        assertEquals(1, api.get("/api/groups?state=open").json().get("items").size());
        assertEquals(0, api.get("/api/groups?state=settled").json().get("items").size(), "its callback waits");
        ApiClient.Resp bad = api.get("/api/groups?state=finished");
        assertEquals(400, bad.status());
        assertTrue(bad.body().contains("state must be open or settled"), bad.body());
        assertTrue(one.get("parent").isNull() && one.get("children").isEmpty(), one.toString());

        JsonNode member = api.get("/api/job-runs/work/" + g.members().get(0).id()).json();
        assertEquals("member", member.get("groups").get(0).get("role").asText(), member.toString());
        assertEquals("g-1", member.get("groups").get(0).get("groupId").asText());
        JsonNode callback = api.get("/api/job-runs/work/g-1").json();
        assertEquals("callback", callback.get("groups").get(0).get("role").asText(), callback.toString());
        assertEquals("waiting", callback.get("groups").get(0).get("state").asText());

        ApiClient.Resp missing = api.get("/api/groups/nope");
        assertEquals(404, missing.status());
        assertTrue(missing.body().contains("no group has the id 'nope'"), missing.body());
    }
}
