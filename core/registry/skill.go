package registry

// SkillsBlockTitle starts the header of a turn's skills block, and the skill tool's texts quote
// it so the model can match the two. Both sides name this one constant; a test checks the quote.
const SkillsBlockTitle = "Skills available now"
