/** Topic location hints: the allowed values (wire/admin/location-hint.ts) and what an isolate learns (objects/shared/location-hint.ts). */
import { describe, expect, it } from "vitest";
import { LOCATION_HINTS, isLocationHint, locationHintRefusal } from "../../wire/admin/location-hint";
import { noteTopicHint, topicObjectOptions } from "../../objects/shared/location-hint";

describe("location hints", () => {
  it("are Cloudflare's nine regions; anything else is refused naming them", () => {
    expect(LOCATION_HINTS).toEqual(["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"]);
    for (const h of LOCATION_HINTS) expect(isLocationHint(h)).toBe(true);
    for (const v of ["WEUR", "eu", "", "toString", null, 3]) expect(isLocationHint(v)).toBe(false);
    expect(locationHintRefusal("mars")).toMatch(/^location hint "mars" is not one of wnam, enam, sam, weur, eeur, apac, oc, afr, me \(wnam: Western North America; /);
  });

  it("an isolate applies the hint it learnt for a topic incarnation (source, twin and groups share it); none → the default placement", () => {
    expect(topicObjectOptions("t1", 7)).toBeUndefined();
    noteTopicHint("t1", { incarnation: 7, locationHint: "apac" });
    expect(topicObjectOptions("t1", 7)).toEqual({ locationHint: "apac" });
    expect(topicObjectOptions("t1", 8)).toBeUndefined();
    expect(topicObjectOptions("t2", 7)).toBeUndefined();
    noteTopicHint("t1", { incarnation: 8 });
    expect(topicObjectOptions("t1", 8)).toBeUndefined();
  });

  it("a TopicInfo without a hint (e.g. from an older snapshot) does not erase one learnt for the same incarnation", () => {
    noteTopicHint("t3", { incarnation: 1, locationHint: "weur" });
    noteTopicHint("t3", { incarnation: 1 });
    noteTopicHint("t3", { incarnation: 1, locationHint: null });
    expect(topicObjectOptions("t3", 1)).toEqual({ locationHint: "weur" });
  });
});
