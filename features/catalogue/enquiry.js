// The project pages' enquiry form (served at /projects/enquiry.js when the website form is on):
// posts the lead as JSON to submitLead, with an Idempotency-Key so a double click or a retry
// stores it once, and shows the receipt or the server's hint.
const form = document.getElementById('enquiry')
const status = document.getElementById('enquiry-status')
const problem = document.getElementById('enquiry-error')
const key = crypto.randomUUID()

form.addEventListener('submit', async (event) => {
  event.preventDefault()
  status.textContent = ''
  problem.textContent = ''
  if (!form.elements.consent.checked) {
    problem.textContent = 'Please tick the box to agree that the studio may contact you.'
    return
  }
  // The server refuses an anonymous lead without consent too, and records when it was given.
  const lead = { consent: true }
  for (const name of ['name', 'email', 'phone']) lead[name] = form.elements[name].value
  const button = form.querySelector('button')
  button.disabled = true
  try {
    const res = await fetch('/scripts/enquiry_backend.php', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(lead),
    })
    const body = await res.json().catch(() => ({}))
    if (res.ok) {
      form.querySelectorAll('input').forEach((input) => {
        input.disabled = true
      })
      status.textContent = `Thank you: the studio will be in touch. Your reference is ${body.id}.`
      button.hidden = true
      return
    }
    problem.textContent = body.hint ? `${body.message} ${body.hint}` : body.message || `The request failed (${res.status}).`
  } catch {
    problem.textContent = 'The request could not be sent; check your connection and try again.'
  }
  button.disabled = false
})
