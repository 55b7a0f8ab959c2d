package httpapi

import (
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

const convBase = "/agent_api/v1/workspaces/default/conversations"

// TestConversationRoutes drives the conversation doors over HTTP with every status and word
// they answer.
func TestConversationRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newRunsFixture(t, s)
		agentID, agentTok := f.newAgent(t, f.admin, "default", "helper")
		f.refused(t, 400, "parameter_missing", "conversation", "POST", convBase, f.admin, nil)
		f.refused(t, 422, "validation_failed", "conversation.answering_agent_public_id", "POST", convBase, f.admin, `{"conversation":{}}`)
		// An agent may omit the answering agent: it answers its own conversation.
		own := obj(t, f.must(t, 201, "POST", convBase, agentTok, `{"conversation":{"title":"mine"}}`), "conversation")
		if own["answering_agent_public_id"] != agentID || own["status"] != "active" || own["queued_turns"] != float64(0) {
			t.Fatalf("agent's conversation %v", own)
		}
		conv := obj(t, f.must(t, 201, "POST", convBase, f.admin, `{"conversation":{"answering_agent_public_id":"`+agentID+`","title":"Release"}}`), "conversation")
		id := conv["public_id"].(string)
		wantTime(t, "created_at", conv["created_at"])
		f.refused(t, 404, "not_found", "", "GET", convBase+"/0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d", f.admin, nil)
		f.refused(t, 400, "parameter_missing", "message", "POST", convBase+"/"+id+"/messages", f.admin, `{}`)
		f.refused(t, 422, "validation_failed", "message.text", "POST", convBase+"/"+id+"/messages", f.admin, `{"message":{"text":""}}`)
		f.refused(t, 422, "tool_not_declared", "message.tool_names[0]", "POST", convBase+"/"+id+"/messages", f.admin, `{"message":{"text":"x","tool_names":["memory_read"]}}`)
		f.refused(t, 422, "unknown_model", "message.model", "POST", convBase+"/"+id+"/messages", f.admin, `{"message":{"text":"x","model":"mock/none"}}`)
		f.refused(t, 422, "unknown_input_upload", "message.attachments[0]", "POST", convBase+"/"+id+"/messages", f.admin, `{"message":{"text":"x","attachments":["6f1b2c3d-0000-4000-8000-000000000001"]}}`)
		f.refused(t, 400, "parameter_invalid", "message.attachments[0]", "POST", convBase+"/"+id+"/messages", f.admin, `{"message":{"text":"x","attachments":["nope"]}}`)
		msg := `{"message":{"text":"!mock\nround 1\nsay hello"}}`
		resp := f.doWith(t, "POST", convBase+"/"+id+"/messages", f.admin, msg, map[string]string{"Idempotency-Key": "m1"})
		if resp.StatusCode != 201 {
			t.Fatalf("post: %d", resp.StatusCode)
		}
		resp = f.doWith(t, "POST", convBase+"/"+id+"/messages", f.admin, msg, map[string]string{"Idempotency-Key": "m1"})
		if resp.StatusCode != 200 {
			t.Fatalf("replay: %d", resp.StatusCode)
		}
		wantError(t, f.doWith(t, "POST", convBase+"/"+id+"/messages", f.admin, `{"message":{"text":"other"}}`, map[string]string{"Idempotency-Key": "m1"}), 409, "idempotency_envelope_mismatch")
		queued := f.must(t, 201, "POST", convBase+"/"+id+"/messages", agentTok, `{"message":{"text":"!mock\nround 1\nsay again"}}`)
		if obj(t, queued, "turn")["status"] != "queued" || obj(t, queued, "run")["status"] != "pending" {
			t.Fatalf("second message %v", queued)
		}
		runID := obj(t, queued, "run")["public_id"].(string)
		f.refused(t, 409, "conversation_hosted", "", "POST", runsBase+"/"+runID+"/start", f.admin, nil)
		f.refused(t, 409, "conversation_hosted", "", "POST", runsBase+"/"+runID+"/tasks", f.admin, `{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}]}`)
		f.refused(t, 409, "conversation_busy", "", "POST", convBase+"/"+id+"/archive", f.admin, nil)
		_, liTok := f.newUser(t, f.admin, "default", "li", "member")
		f.refused(t, 403, "not_authorized", "", "POST", convBase+"/"+id+"/archive", liTok, nil)
		f.drain(t)
		hist := f.must(t, 200, "GET", convBase+"/"+id+"/history", f.admin, nil)
		turns := list(t, hist, "turns")
		if len(turns) != 2 || turns[0]["status"] != "completed" || obj(t, turns[0], "answer")["text"] != "hello" ||
			turns[1]["status"] != "completed" || obj(t, turns[1], "author")["kind"] != "agent" {
			t.Fatalf("history %v", turns)
		}
		if obj(t, hist, "pagination")["has_older"] != false {
			t.Fatalf("pagination %v", hist["pagination"])
		}
		f.refused(t, 400, "parameter_invalid", "before_position", "GET", convBase+"/"+id+"/history?before_position=x", f.admin, nil)
		page := f.must(t, 200, "GET", convBase+"/"+id+"/history?limit=1", f.admin, nil)
		if p := obj(t, page, "pagination"); p["has_older"] != true || p["next_before_position"] != float64(2) {
			t.Fatalf("history page %v", p)
		}
		run := obj(t, f.must(t, 200, "GET", runsBase+"/"+runID, f.admin, nil), "run")
		if run["conversation_public_id"] != id || run["answering_agent_public_id"] != agentID {
			t.Fatalf("hosted run %v", run)
		}
		arch := obj(t, f.must(t, 200, "POST", convBase+"/"+id+"/archive", f.admin, nil), "conversation")
		if arch["status"] != "archived" {
			t.Fatalf("archived %v", arch)
		}
		f.refused(t, 409, "conversation_archived", "", "POST", convBase+"/"+id+"/messages", f.admin, `{"message":{"text":"x"}}`)
		all := list(t, f.must(t, 200, "GET", convBase+"?status=archived", f.admin, nil), "conversations")
		if len(all) != 1 || all[0]["public_id"] != id {
			t.Fatalf("archived list %v", all)
		}
		f.refused(t, 400, "parameter_invalid", "after", "GET", convBase+"?after=zzz", f.admin, nil)
	})
}
