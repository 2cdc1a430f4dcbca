package modelcard

import "testing"

func TestLoraSuffixIsOneDistinctSegment(t *testing.T) {
	seen := map[string]string{}
	for _, name := range []string{"sql-expert", "SQL-Expert", "sql_expert", "a.b", "a_b", "héllo"} {
		s := LoraSuffix(name)
		if !ValidLoraName(s) || s != Slug(s) {
			t.Errorf("LoraSuffix(%q) = %q: not one key-safe segment", name, s)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("LoraSuffix(%q) = LoraSuffix(%q) = %q", name, prev, s)
		}
		seen[s] = name
	}
}

func TestForLora(t *testing.T) {
	base := &Card{DisplayName: "Qwen3-0.6B", Slug: "qwen3-0_6b", Aliases: []string{"qwen"}, MDCSum: "sha256:x"}
	a := base.ForLora("SQL.Expert", "file:///adapters/sql")
	if a.DisplayName != "SQL.Expert" || a.Slug != "sql_expert" || a.Aliases != nil || a.MDCSum != "" ||
		a.Lora == nil || *a.Lora != (Lora{Name: "SQL.Expert", BaseModel: "Qwen3-0.6B", Source: "file:///adapters/sql"}) {
		t.Fatalf("adapter card %+v (lora %+v)", a, a.Lora)
	}
	if base.Lora != nil || base.DisplayName != "Qwen3-0.6B" {
		t.Fatal("ForLora changed the base card")
	}
}
