package dev.layover.core;

import java.util.Objects;

/**
 * How a group of jobs is made ({@link Layover#enqueueGroup}): its callback job, its policy, whether
 * it is sealed at creation, and its id. Immutable; start from {@link #callback(JobType, Object)} and
 * chain {@code withX} calls.
 *
 * <p>A group is one row of {@code layover.groups}, one row of {@code layover.group_members} per
 * member, and its callback: an ordinary job of {@code callbackType}, whose id is the group's id,
 * inserted with the group and waiting (run time 9999-12-31, reason {@code group}) until every
 * member has finished; then it is made due, once, in the transaction that wrote the last member's
 * end ({@code layover.group_settle}). Its handler reads the members' results and counts with
 * {@link JobContext#group()}. See {@code docs/composition.md}.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link #policy()}</td><td>{@link Policy#ON_COMPLETE}: the callback runs once every member
 *       is done or its dead letter discarded</td></tr>
 *   <tr><td>{@link #sealed()}</td><td>true: the group takes no members after the enqueue call
 *       ({@link #open()}: until {@link Layover#sealGroup})</td></tr>
 *   <tr><td>{@link #key()}</td><td>none: the group's id is a new time-ordered UUID</td></tr>
 * </table>
 *
 * @param callbackType the callback's job type, registered on the instance that enqueues
 * @param callbackArgs the callback's args
 * @param policy when the callback runs
 * @param sealed whether the group is sealed at creation
 * @param key the group's id (1-200 characters; also the callback job's id), or null for a new one.
 *     A group whose id exists is not made again: the enqueue writes nothing and says
 *     {@code created = false}
 * @param parent the open group whose member the callback is (groups of groups), or null
 * @param <C> the callback's args type
 */
public record GroupOptions<C>(JobType<C> callbackType, C callbackArgs, Policy policy, boolean sealed, String key,
        String parent) {

    /** When a group's callback runs. */
    public enum Policy {
        /** Once every member is done or its dead letter was discarded (stored {@code on_complete}). */
        ON_COMPLETE("on_complete"),
        /**
         * Only when every member is done: once the last member ended with one discarded, the group
         * is settled {@code skipped} and its callback job is deleted (stored {@code on_success}).
         */
        ON_SUCCESS("on_success");

        private final String stored;

        Policy(String stored) {
            this.stored = stored;
        }

        /** @return the policy as {@code layover.groups.policy} stores it */
        public String stored() {
            return stored;
        }

        /**
         * @param stored a value of {@code layover.groups.policy}
         * @return the policy
         */
        public static Policy of(String stored) {
            return "on_success".equals(stored) ? ON_SUCCESS : ON_COMPLETE;
        }
    }

    /**
     * Validates the options.
     *
     * @param callbackType the callback's job type
     * @param callbackArgs the callback's args
     * @param policy when the callback runs
     * @param sealed whether the group is sealed at creation
     * @param key the group's id, or null
     * @param parent the open group whose member the callback is, or null
     */
    public GroupOptions {
        Objects.requireNonNull(callbackType, "callbackType");
        Objects.requireNonNull(callbackArgs, "callbackArgs");
        Objects.requireNonNull(policy, "policy");
        if (key != null) {
            EnqueueOptions.key(key); // the same rules as an idempotency key
        }
    }

    /**
     * Options without a parent group (the form before groups of groups).
     *
     * @param callbackType the callback's job type
     * @param callbackArgs the callback's args
     * @param policy when the callback runs
     * @param sealed whether the group is sealed at creation
     * @param key the group's id, or null
     */
    public GroupOptions(JobType<C> callbackType, C callbackArgs, Policy policy, boolean sealed, String key) {
        this(callbackType, callbackArgs, policy, sealed, key, null);
    }

    /**
     * Groups of groups: this group's callback is a member of {@code parentId}, an open group (made
     * {@link #open()} and not sealed yet), added under its lock as {@link Layover#addToGroup} adds;
     * the parent's callback runs once this group's callback has finished (or, when this group is
     * skipped under {@link Policy#ON_SUCCESS}, counts it {@code discarded}).
     *
     * @param parentId the parent group's id
     * @return a copy whose callback joins that group
     */
    public GroupOptions<C> inGroup(String parentId) {
        return new GroupOptions<>(callbackType, callbackArgs, policy, sealed, key, java.util.Objects.requireNonNull(
                parentId, "parentId"));
    }

    /**
     * @param type the callback's job type
     * @param args its args
     * @param <C> the args type
     * @return a sealed group, policy {@link Policy#ON_COMPLETE}, with a new id
     */
    public static <C> GroupOptions<C> callback(JobType<C> type, C args) {
        return new GroupOptions<>(type, args, Policy.ON_COMPLETE, true, null, null);
    }

    /** @return a copy whose callback runs only when every member is done ({@link Policy#ON_SUCCESS}) */
    public GroupOptions<C> onSuccessOnly() {
        return new GroupOptions<>(callbackType, callbackArgs, Policy.ON_SUCCESS, sealed, key, parent);
    }

    /**
     * @param p the policy
     * @return a copy with that policy
     */
    public GroupOptions<C> withPolicy(Policy p) {
        return new GroupOptions<>(callbackType, callbackArgs, p, sealed, key, parent);
    }

    /**
     * @return a copy left open: {@link Layover#addToGroup} may add members until
     *     {@link Layover#sealGroup}, and the callback waits for the seal
     */
    public GroupOptions<C> open() {
        return new GroupOptions<>(callbackType, callbackArgs, policy, false, key, parent);
    }

    /**
     * @param id the group's id (and its callback job's id)
     * @return a copy with that id
     */
    public GroupOptions<C> withKey(String id) {
        return new GroupOptions<>(callbackType, callbackArgs, policy, sealed, id, parent);
    }
}
