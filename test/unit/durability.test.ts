import { describe, expect, it } from "vitest";
import { Durability } from "../../wire/mortar";
import { durabilityOfBookmark } from "../../objects/shared/durability";

describe("durabilityOfBookmark", () => {
  it("local workerd bookmarks (all-zero hash) are LOCAL, whatever their commit counter", () => {
    expect(durabilityOfBookmark("00000000-00000000-00000000-00000000000000000000000000000000")).toBe(Durability.LOCAL);
    expect(durabilityOfBookmark("00000000-00000002-00000000-00000000000000000000000000000000")).toBe(Durability.LOCAL);
    expect(durabilityOfBookmark("")).toBe(Durability.LOCAL);
  });

  it("a deployed Durable Object's bookmark (hash of the replicated log) is REPLICATED", () => {
    expect(durabilityOfBookmark("0000007b-0000b26e-00001538-0c3e87bb37b3db5cc52eedb93cd3b96b")).toBe(Durability.REPLICATED);
  });
});
